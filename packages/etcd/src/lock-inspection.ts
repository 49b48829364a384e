import { createHash } from 'node:crypto';
import { EtcdReplyError, type EtcdTransport } from './http-transport.js';
import { b64, prefixEnd, queuePrefix, unb64 } from './keys.js';

/** One key of a resource's queue, as an operator sees it. */
export interface EtcdQueueEntry {
  /** First 12 hex digits of SHA-256 of the lease id: tells holders apart, reveals nothing. */
  readonly owner: string;
  /** `write` (a plain or write lock), `read`, or `permit` (a semaphore's). */
  readonly mode: 'write' | 'read' | 'permit';
  /** The key's create revision: its place in the queue, and the holder's fencing token. */
  readonly token: bigint;
  /** What is left of the lease, in ms (etcd counts whole seconds); absent when it just ended. */
  readonly ttlMs?: number;
  /** Whether this key holds the lock now; a semaphore's permits count is the callers' option, not stored: `undefined`. */
  readonly holds: boolean | undefined;
}

/**
 * Who holds a resource on etcd and who waits, read at one revision.
 *
 * @example
 * ```ts
 * const state = await operator.inspect('order:42');
 * state.holder; // '3f9a0c2b71d4', or undefined when free
 * ```
 */
export interface EtcdLockInspection {
  readonly resource: string;
  /** The lock queue (plain, read and write locks), oldest first. */
  readonly lock: readonly EtcdQueueEntry[];
  /** The semaphore queue of the same name, oldest first (the `permits` oldest hold). */
  readonly semaphore: readonly EtcdQueueEntry[];
  /** The owner of the lock's holding writer, or of the first holding reader. */
  readonly holder?: string;
  /** The cluster's revision at the read: every later grant's fencing token is greater. */
  readonly revision: bigint;
}

/** What a forced release did. */
export interface EtcdForceReleaseResult {
  readonly resource: string;
  /** Leases revoked: the holders' (one for a writer, one per reader holding together). */
  readonly released: number;
  readonly owners: readonly string[];
  /** Other resources the revoked leases held (a multi-resource lock is one lease): freed too. */
  readonly alsoReleased: readonly string[];
  /**
   * The greatest fencing token among the revoked holders: every later holder's is greater (it
   * queued after them), so a fenced store refuses the revoked holders' writes once it saw one.
   */
  readonly revokedToken?: bigint;
}

interface KeyValue {
  readonly key?: string;
  readonly create_revision?: string;
  readonly lease?: string;
}

/** The owner hash of a lease id, as the Redis inspection hashes its owner tokens. */
export function ownerHash(leaseId: string): string {
  return createHash('sha256').update(leaseId).digest('hex').slice(0, 12);
}

async function range(t: EtcdTransport, prefix: string, deadline: number): Promise<{ kvs: readonly KeyValue[]; revision: bigint }> {
  const res = await t.call<{ kvs?: KeyValue[]; header?: { revision?: string } }>(
    '/v3/kv/range',
    { key: b64(prefix), range_end: prefixEnd(prefix), keys_only: true, sort_target: 'CREATE', sort_order: 'ASCEND' },
    deadline,
  );
  return { kvs: res.kvs ?? [], revision: BigInt(res.header?.revision ?? '0') };
}

/** A lease's TTL in ms and the keys attached to it; `undefined` when it is gone. */
async function lease(t: EtcdTransport, id: string, deadline: number): Promise<{ ttlMs: number; keys: string[] } | undefined> {
  const res = await t.call<{ TTL?: string; keys?: string[] }>('/v3/lease/timetolive', { ID: id, keys: true }, deadline);
  const ttl = Number(res.TTL ?? -1);
  return ttl < 0 ? undefined : { ttlMs: ttl * 1_000, keys: (res.keys ?? []).map(unb64) };
}

/** The queue under `prefix` in create order, each entry with its lease's TTL. */
async function queue(t: EtcdTransport, prefix: string, semaphore: boolean, deadline: number) {
  const { kvs, revision } = await range(t, prefix, deadline);
  const writers = new Set(kvs.filter((kv) => unb64(kv.key).startsWith(`${prefix}w/`)).map((kv) => kv.lease));
  const queued = kvs.filter((kv) => unb64(kv.key).startsWith(`${prefix}q/`) && kv.lease);
  const leases = await Promise.all(queued.map((kv) => lease(t, kv.lease!, deadline)));
  let blocked = false;
  const entries = queued.map((kv, i): EtcdQueueEntry & { leaseId: string } => {
    const mode = semaphore ? 'permit' : writers.has(kv.lease) ? 'write' : 'read';
    // A writer holds when nothing is ahead; readers hold together until the first writer.
    const holds = semaphore ? undefined : !blocked && (mode === 'read' || i === 0);
    if (!semaphore && (mode === 'write' || !holds)) blocked = true;
    const ttl = leases[i]?.ttlMs;
    return {
      owner: ownerHash(kv.lease!),
      mode,
      token: BigInt(kv.create_revision ?? '0'),
      ...(ttl === undefined ? {} : { ttlMs: ttl }),
      holds,
      leaseId: kv.lease!,
    };
  });
  return { entries, revision };
}

/** Reads a resource's lock and semaphore queues. */
export async function inspectResource(
  t: EtcdTransport,
  keyPrefix: string,
  resource: string,
  deadline: number,
): Promise<EtcdLockInspection> {
  const [lock, semaphore] = await Promise.all([
    queue(t, queuePrefix(keyPrefix, resource, false), false, deadline),
    queue(t, queuePrefix(keyPrefix, resource, true), true, deadline),
  ]);
  const strip = (entries: ReadonlyArray<EtcdQueueEntry & { leaseId: string }>): EtcdQueueEntry[] =>
    entries.map(({ leaseId: _, ...entry }) => entry);
  const holder = lock.entries.find((e) => e.holds)?.owner;
  return {
    resource,
    lock: strip(lock.entries),
    semaphore: strip(semaphore.entries),
    ...(holder === undefined ? {} : { holder }),
    revision: lock.revision > semaphore.revision ? lock.revision : semaphore.revision,
  };
}

/** The resource a key of `keyPrefix` queues for, or undefined for a key of another layout. */
function resourceOf(keyPrefix: string, key: string): string | undefined {
  const match = /^(?:lock|sem)\/(\d+):/.exec(key.slice(keyPrefix.length));
  if (!key.startsWith(keyPrefix) || !match) return undefined;
  const start = keyPrefix.length + match[0].length;
  return key.slice(start, start + Number(match[1]));
}

/**
 * Revokes the leases holding `resource`'s lock: the keys go with them in one revision, the next
 * waiter is granted with a greater token, and the old holder's next keep-alive finds its lease
 * gone (its `lock.signal` aborts). Waiters keep their places. A lease that ended meanwhile is
 * skipped: lease ids are never reused, so a newer holder is never revoked by mistake.
 */
export async function forceReleaseResource(
  t: EtcdTransport,
  keyPrefix: string,
  resource: string,
  deadline: number,
): Promise<EtcdForceReleaseResult> {
  const { entries } = await queue(t, queuePrefix(keyPrefix, resource, false), false, deadline);
  const holders = entries.filter((e) => e.holds);
  const owners: string[] = [];
  const also = new Set<string>();
  let revoked: bigint | undefined;
  for (const holder of holders) {
    const state = await lease(t, holder.leaseId, deadline);
    for (const key of state?.keys ?? []) {
      const other = resourceOf(keyPrefix, key);
      if (other !== undefined && other !== resource) also.add(other);
    }
    try {
      await t.call('/v3/lease/revoke', { ID: holder.leaseId }, deadline);
      owners.push(holder.owner);
      if (revoked === undefined || holder.token > revoked) revoked = holder.token;
    } catch (err) {
      // NOT_FOUND: the holder released or expired meanwhile; nothing of ours to free.
      if (!(err instanceof EtcdReplyError && err.code === 5)) throw err;
    }
  }
  return {
    resource,
    released: owners.length,
    owners,
    alsoReleased: [...also].sort(),
    ...(revoked === undefined ? {} : { revokedToken: revoked }),
  };
}
