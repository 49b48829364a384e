import { b64, prefixEnd, unb64, type QueueMode } from './keys.js';
import { EtcdReplyError, type EtcdTransport } from './http-transport.js';

/**
 * Each etcd operation the engine sends, as a small function beside its request body (the
 * gateway's JSON of etcd's protobuf messages: int64 fields are decimal strings, keys base64).
 */

interface Header {
  readonly revision?: string;
}
interface KeyValue {
  readonly key?: string;
  readonly create_revision?: string;
  readonly lease?: string;
}
interface RangeResponse {
  readonly header?: Header;
  readonly kvs?: readonly KeyValue[];
  readonly count?: string;
}
interface TxnResponse {
  readonly header?: Header;
  readonly succeeded?: boolean;
  readonly responses?: ReadonlyArray<{ readonly response_range?: RangeResponse; readonly response_put?: { header?: Header } }>;
}

/** gRPC NOT_FOUND: etcd's "requested lease not found". */
const NOT_FOUND = 5;

/** Grants a lease of `ttlSeconds`; etcd may raise it to its minimum (1.5 election timeouts). */
export async function grantLease(t: EtcdTransport, ttlSeconds: number, deadline: number): Promise<{ id: string; ttlSeconds: number }> {
  const res = await t.call<{ ID?: string; TTL?: string; error?: string }>('/v3/lease/grant', { TTL: String(ttlSeconds) }, deadline);
  if (!res.ID) throw new EtcdReplyError(0, `lease grant refused: ${res.error ?? 'no lease id'}`);
  return { id: res.ID, ttlSeconds: Number(res.TTL ?? ttlSeconds) };
}

/**
 * Renews leases in one request (the keep-alive stream's messages, one per lease). Returns each
 * lease's new TTL in seconds: 0 for a lease that is gone (expired or revoked).
 */
export async function keepAlive(t: EtcdTransport, ids: readonly string[], deadline: number): Promise<Map<string, number>> {
  const body = ids.map((ID) => JSON.stringify({ ID })).join('');
  const res = await t.call<unknown>('/v3/lease/keepalive', body, deadline);
  const replies = (Array.isArray(res) ? res : [res]) as Array<{ result?: { ID?: string; TTL?: string } }>;
  const ttls = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const r of replies) if (r.result?.ID) ttls.set(r.result.ID, Number(r.result.TTL ?? 0));
  return ttls;
}

/** Revokes a lease: its keys are deleted with it, in one revision. A lease already gone is fine. */
export async function revokeLease(t: EtcdTransport, id: string, deadline: number): Promise<boolean> {
  try {
    await t.call('/v3/lease/revoke', { ID: id }, deadline);
    return true;
  } catch (err) {
    if (err instanceof EtcdReplyError && err.code === NOT_FOUND) return false;
    throw err;
  }
}

/** A lease's remaining TTL in seconds (rounded down by etcd), or -1 when it is gone. */
export async function leaseTtl(t: EtcdTransport, id: string, deadline: number): Promise<number> {
  const res = await t.call<{ TTL?: string }>('/v3/lease/timetolive', { ID: id }, deadline);
  return Number(res.TTL ?? -1);
}

/** What a waiter knows about its queue at one revision. */
export interface QueuePosition {
  /** The create revision of our key: its place in the queue and its fencing token. */
  readonly revision: bigint;
  /** Whether our turn has come (nothing ahead blocks us, or fewer than `slots` keys for a permit). */
  readonly holds: boolean;
  /** The revision this was read at: only deletions after it are news. */
  readonly readAt: bigint;
  /** Plain, write and read waiters: the one key whose deletion may end the wait (etcd's recipe). */
  readonly watchKey: string | undefined;
  /** Permits: the exact number of keys ahead, when known (`undefined` after a reconnect: every deletion ahead wakes). */
  readonly ahead: number | undefined;
  /** The lease of the oldest key ahead (the holder), when read. */
  readonly holderLease: string | undefined;
}

/** One key of an acquisition: where it queues and what its turn means. */
export interface HeldKey {
  readonly prefix: string;
  readonly key: string;
  readonly revision: bigint;
  readonly mode: QueueMode;
  /** Holders allowed at once: 1 for locks, `permits` for a semaphore. */
  readonly slots: number;
}

/**
 * The range whose keys keep a waiter of `mode` waiting: the nearest ones ahead first. Limits and
 * sorting apply after etcd's revision filter, so the keys are exact; the `count` of a filtered
 * range is not (etcd counts before filtering) and is never read.
 */
function blockersRange(prefix: string, revision: bigint | undefined, mode: QueueMode, slots: number): Record<string, unknown> {
  const sub = `${prefix}${mode === 'r' ? 'w/' : 'q/'}`;
  return {
    key: b64(sub),
    range_end: prefixEnd(sub),
    sort_target: 'CREATE',
    sort_order: 'DESCEND',
    keys_only: true,
    limit: String(mode === 'p' ? slots : 1),
    // Inside the enqueue transaction (before our put) every key there is ahead of ours.
    ...(revision === undefined ? {} : { max_create_revision: String(revision - 1n) }),
  };
}

/** The oldest key of a queue (the holder, for `retryAfterMs`). */
function holderRange(prefix: string): Record<string, unknown> {
  const sub = `${prefix}q/`;
  return { key: b64(sub), range_end: prefixEnd(sub), sort_target: 'CREATE', sort_order: 'ASCEND', keys_only: true, limit: '1' };
}

/** Our turn, from the blockers range. */
function turn(range: RangeResponse | undefined, mode: QueueMode, slots: number): { holds: boolean; watchKey: string | undefined } {
  const kvs = range?.kvs ?? [];
  if (mode === 'p') return { holds: kvs.length < slots, watchKey: undefined };
  return { holds: kvs.length === 0, watchKey: kvs[0]?.key === undefined ? undefined : unb64(kvs[0].key) };
}

/**
 * Puts our key(s) in the queue and reads, in the same transaction and before the put, what is
 * ahead: every key there is. A retry after an unknown outcome finds our key and reads its place.
 */
export async function enqueue(
  t: EtcdTransport,
  held: Omit<HeldKey, 'revision'>,
  leaseId: string,
  writer: string | undefined,
  deadline: number,
): Promise<QueuePosition> {
  const k = b64(held.key);
  const puts = [held.key, ...(writer ? [writer] : [])].map((key) => ({ request_put: { key: b64(key), value: '', lease: leaseId } }));
  const all = `${held.prefix}q/`;
  const res = await t.call<TxnResponse>(
    '/v3/kv/txn',
    {
      compare: [{ key: k, target: 'CREATE', result: 'EQUAL', create_revision: '0' }],
      success: [
        { request_range: blockersRange(held.prefix, undefined, held.mode, held.slots) },
        { request_range: holderRange(held.prefix) },
        // Unfiltered, so exact: how many keys are ahead of ours (for permits).
        { request_range: { key: b64(all), range_end: prefixEnd(all), count_only: true } },
        ...puts,
      ],
      failure: [{ request_range: { key: k } }],
    },
    deadline,
  );
  const readAt = BigInt(res.header?.revision ?? '0');
  if (res.succeeded) {
    const r = res.responses ?? [];
    const ahead = Number(r[2]?.response_range?.count ?? 0);
    const { holds, watchKey } = turn(r[0]?.response_range, held.mode, held.slots);
    return {
      revision: readAt,
      readAt,
      holds,
      watchKey,
      ahead: held.mode === 'p' ? ahead : undefined,
      holderLease: r[1]?.response_range?.kvs?.[0]?.lease,
    };
  }
  const mine = res.responses?.[0]?.response_range?.kvs?.[0];
  if (!mine?.create_revision) throw new EtcdReplyError(0, 'our queue key vanished while it was being created');
  return position(t, { ...held, revision: BigInt(mine.create_revision) }, deadline);
}

/** Reads our turn now: what blocks our key (created at `held.revision`). */
export async function position(t: EtcdTransport, held: HeldKey, deadline: number): Promise<QueuePosition> {
  const range = await t.call<RangeResponse>('/v3/kv/range', blockersRange(held.prefix, held.revision, held.mode, held.slots), deadline);
  const { holds, watchKey } = turn(range, held.mode, held.slots);
  const ahead = held.mode === 'p' && holds ? (range.kvs ?? []).length : undefined;
  return { revision: held.revision, readAt: BigInt(range.header?.revision ?? '0'), holds, watchKey, ahead, holderLease: undefined };
}

/**
 * Confirms, in one linearizable transaction, that every key of an acquisition still exists with
 * its revision (so its lease is alive) and that each one's turn has come.
 */
export async function confirm(t: EtcdTransport, keys: readonly HeldKey[], deadline: number): Promise<'held' | 'gone' | 'waiting'> {
  const res = await t.call<TxnResponse>(
    '/v3/kv/txn',
    {
      compare: keys.map((k) => ({ key: b64(k.key), target: 'CREATE', result: 'EQUAL', create_revision: String(k.revision) })),
      success: keys.map((k) => ({ request_range: blockersRange(k.prefix, k.revision, k.mode, k.slots) })),
      failure: [],
    },
    deadline,
  );
  if (!res.succeeded) return 'gone';
  const waiting = keys.some((k, i) => !turn(res.responses?.[i]?.response_range, k.mode, k.slots).holds);
  return waiting ? 'waiting' : 'held';
}

/** Whether every key still exists with its create revision (a fence check of a held lock). */
export async function stillHeld(t: EtcdTransport, keys: readonly HeldKey[], deadline: number): Promise<boolean> {
  const res = await t.call<TxnResponse>(
    '/v3/kv/txn',
    { compare: keys.map((k) => ({ key: b64(k.key), target: 'CREATE', result: 'EQUAL', create_revision: String(k.revision) })) },
    deadline,
  );
  return res.succeeded === true;
}

/** Every key of a queue, oldest first, with its revision and lease (for inspect and the CLI). */
export async function queueKeys(
  t: EtcdTransport,
  prefix: string,
  deadline: number,
): Promise<Array<{ key: string; revision: bigint; lease: string | undefined }>> {
  const range = await t.call<RangeResponse>(
    '/v3/kv/range',
    { key: b64(prefix), range_end: prefixEnd(prefix), sort_target: 'CREATE', sort_order: 'ASCEND', keys_only: true },
    deadline,
  );
  return (range.kvs ?? []).map((kv) => ({ key: unb64(kv.key), revision: BigInt(kv.create_revision ?? '0'), lease: kv.lease }));
}
