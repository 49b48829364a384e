import { confirm, enqueue, grantLease, keepAlive, leaseTtl, position, revokeLease, type HeldKey, type QueuePosition } from './etcd-ops.js';
import type { EtcdTransport } from './http-transport.js';
import { queueKey, queuePrefix, writerKey, type QueueMode } from './keys.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { QueueWaiter, QueueWatch } from './queue-watch.js';

/**
 * One acquisition on etcd, following etcd's own lock recipe: grant a lease with the lock's TTL,
 * put one key per resource under the resource's queue (in sorted order, each after the previous
 * one is held, so two callers never deadlock), and wait until the keys ahead are gone (watched,
 * never polled). Then, because a wait can outlast a lease (Jepsen's etcd 3.4.3 analysis, etcd
 * #11456), renew the lease and confirm every key in one transaction before granting, and compute
 * the lock's validity from that renewal, as Redlock computes it from its round.
 */

/** What an acquisition needs from its engine. */
export interface AcquireContext {
  readonly transport: EtcdTransport;
  readonly keeper: LeaseKeeper;
  readonly keyPrefix: string;
  /** The process-wide watch of a queue (created on first use). */
  watch(prefix: string): QueueWatch;
  /** Keeps a background request (a revoke) in view, so close() waits for it. */
  track(pending: Promise<unknown>): void;
  /** Milliseconds of the TTL not trusted (clock drift between us and the leader). */
  drift(ttlMs: number): number;
}

/** One acquisition's request, arguments already validated. */
export interface AcquireRequest {
  /** Sorted: every caller takes resources in the same order. */
  readonly resources: readonly string[];
  readonly ttlMs: number;
  readonly mode: QueueMode;
  /** Holders allowed at once: 1, or a semaphore's permits. */
  readonly slots: number;
  /** Monotonic time after which the acquisition gives up waiting. */
  readonly deadline: number;
  /** One attempt: contended means failed, no waiting. */
  readonly once: boolean;
  readonly signal: AbortSignal | undefined;
}

/** The acquisition won. */
export interface Acquired {
  readonly leaseId: string;
  readonly keys: readonly HeldKey[];
  /** Monotonic end of the lock's validity. */
  readonly validUntil: number;
}

/** Contended past the deadline (or at once, for a single attempt); `retryAfterMs` estimates the holder's end. */
export class Contended extends Error {
  constructor(readonly retryAfterMs: number | undefined) {
    super('contended');
  }
}

/** The acquisition's lease ended while it waited (its process paused, a member revoked it): start again. */
export class LeaseGone extends Error {
  constructor() {
    super('lease gone');
  }
}

/** Runs one acquisition with a fresh lease; on any failure the lease is revoked (its keys leave the queues). */
export async function acquireWithLease(ctx: AcquireContext, req: AcquireRequest): Promise<Acquired> {
  const t = ctx.transport;
  const start = performance.now();
  const lease = await grantLease(t, Math.max(1, Math.ceil(req.ttlMs / 1000)), req.deadline);
  const state = { gone: false, wake: (): void => undefined, holderEndsAt: undefined as number | undefined };
  ctx.keeper.add(lease.id, lease.ttlSeconds, start, () => {
    state.gone = true;
    state.wake();
  });
  try {
    const keys: HeldKey[] = [];
    let waited = false;
    for (const resource of req.resources) {
      const prefix = queuePrefix(ctx.keyPrefix, resource, req.mode === 'p');
      const spec = { prefix, key: queueKey(prefix, lease.id), mode: req.mode, slots: req.slots };
      const pos = await enqueue(t, spec, lease.id, req.mode === 'w' ? writerKey(prefix, lease.id) : undefined, req.deadline);
      const held: HeldKey = { ...spec, revision: pos.revision };
      keys.push(held);
      if (pos.holds) continue;
      noteHolder(t, pos, state, req.deadline);
      if (req.once) throw new Contended(await holderTtl(t, pos, req.deadline));
      waited = true;
      await waitTurn(ctx, held, state, req, pos);
    }
    if (!waited) {
      // Won without waiting: the lease was granted after `start`, so it lives at least its TTL from there.
      ctx.keeper.remove(lease.id);
      return { leaseId: lease.id, keys, validUntil: start + Math.min(req.ttlMs, lease.ttlSeconds * 1000) - ctx.drift(req.ttlMs) };
    }
    for (;;) {
      const sent = performance.now();
      const ttl = (await keepAlive(t, [lease.id], req.deadline)).get(lease.id) ?? 0;
      if (ttl <= 0 || state.gone) throw new LeaseGone();
      const turn = await confirm(t, keys, req.deadline);
      if (turn === 'gone') throw new LeaseGone();
      if (turn === 'held') {
        ctx.keeper.remove(lease.id);
        return { leaseId: lease.id, keys, validUntil: sent + Math.min(req.ttlMs, ttl * 1000) - ctx.drift(req.ttlMs) };
      }
      // A deletion not seen (or a key ahead that came back): wait again on each key, from a fresh read.
      for (const held of keys) await waitTurn(ctx, held, state, req, undefined);
    }
  } catch (err) {
    ctx.keeper.remove(lease.id);
    // Not awaited: a caller past its deadline is not held up; a failed revoke leaves the lease to expire.
    ctx.track(revokeLease(t, lease.id, performance.now() + 2 * 1000).catch(() => undefined));
    if (err instanceof Contended && err.retryAfterMs === undefined && state.holderEndsAt !== undefined) {
      throw new Contended(Math.max(1, Math.round(state.holderEndsAt - performance.now())));
    }
    throw err;
  }
}

/** Remembers when the current holder's lease ends (for `retryAfterMs`), without holding up the wait. */
function noteHolder(t: EtcdTransport, pos: QueuePosition, state: { holderEndsAt: number | undefined }, deadline: number): void {
  if (!pos.holderLease) return;
  const sent = performance.now();
  leaseTtl(t, pos.holderLease, deadline).then(
    (ttl) => {
      if (ttl > 0) state.holderEndsAt = sent + ttl * 1000;
    },
    () => undefined,
  );
}

async function holderTtl(t: EtcdTransport, pos: QueuePosition, deadline: number): Promise<number | undefined> {
  if (!pos.holderLease) return undefined;
  const ttl = await leaseTtl(t, pos.holderLease, deadline).catch(() => -1);
  return ttl > 0 ? ttl * 1000 : undefined;
}

/**
 * Waits until `held`'s turn has come: the queue's watch wakes it when the key it waits for is
 * deleted (a permit waiter: when fewer keys than its permits are ahead); then one read confirms,
 * or names the next key to wait for. `first`: the position read by the enqueue, which counts
 * only if the watch was established before it.
 */
async function waitTurn(
  ctx: AcquireContext,
  held: HeldKey,
  state: { gone: boolean; wake: () => void },
  req: AcquireRequest,
  first: QueuePosition | undefined,
): Promise<void> {
  const watch = ctx.watch(held.prefix);
  // An object: the flag is set by the watch, between the awaits below.
  const flag: { woken: boolean; resume: (() => void) | undefined } = { woken: false, resume: undefined };
  const wokenSince = (): boolean => flag.woken;
  const wake = (): void => {
    flag.woken = true;
    flag.resume?.();
  };
  const waiter: QueueWaiter = { revision: held.revision, slots: held.slots, watchKey: undefined, ahead: undefined, readAt: 0n, wake };
  state.wake = wake;
  // A stream already up may have dispatched the deletion that followed `first` before this
  // waiter listened: then `first` is stale and the position is read again, listening.
  const joined = watch.live;
  watch.waiters.add(waiter);
  try {
    const since = await until(watch.ready(), req);
    let pos = first && !joined && since <= first.readAt + 1n ? first : undefined;
    for (;;) {
      if (state.gone) throw new LeaseGone();
      // Wakes are cleared only before a fresh read, never when `first` is trusted: the watch's
      // first events can come in the same chunk as its creation, so they wake this waiter before
      // `ready()` returns, and clearing them then lost the deletion `first` waits for.
      if (!pos) {
        flag.woken = false;
        // The read and the watch are two connections: the watch may deliver the deletion of the
        // key this read will name before the read's answer is in. Until it is, any deletion ahead
        // wakes this waiter (a spare read at worst), so no such deletion is missed.
        waiter.watchKey = undefined;
        waiter.ahead = undefined;
        pos = await position(ctx.transport, held, req.deadline);
      }
      // Deletions after this read still count; ones before it are in it already.
      waiter.watchKey = pos.watchKey;
      waiter.ahead = pos.ahead;
      waiter.readAt = pos.readAt;
      if (pos.holds) return;
      pos = undefined;
      if (!wokenSince()) await until(new Promise<void>((resolve) => (flag.resume = resolve)), req);
      flag.resume = undefined;
    }
  } finally {
    state.wake = () => undefined;
    watch.remove(waiter);
  }
}

/** `promise`, or a rejection at the request's deadline ({@link Contended}) or on its signal (its reason). */
function until<T>(promise: Promise<T>, req: AcquireRequest): Promise<T> {
  const signal = req.signal;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    // Ref'd: a pending acquisition keeps the process alive until its deadline.
    const timer = setTimeout(() => settle(() => reject(new Contended(undefined))), Math.max(0, req.deadline - performance.now()));
    const onAbort = (): void => settle(() => reject(signal!.reason as Error));
    const settle = (fn: () => void): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => settle(() => resolve(value)),
      (err: unknown) => settle(() => reject(err)),
    );
  });
}
