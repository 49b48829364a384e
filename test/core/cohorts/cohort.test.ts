/**
 * Lock cohorting (lock-cohort.ts): a release hands the lock to a waiter of the same Redlock
 * for the same keys, without a Redis command; the old Lock is inert; bounds give other
 * processes their turn; fencing tokens still rise; validity stays honest.
 */
import { describe, expect, it } from '@jest/globals';
import {
  LockLostError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  RedlockArgumentError,
  RedlockClosedError,
  type RedlockEventMap,
  Redlock,
  type Lock,
} from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { lockKey, rejection, uniqueResource, until, useFixture, type Fixture } from '../helpers.js';
import { maxOverlap, type Interval } from '../intervals.js';

/** Every command the nodes ran so far, except the INFO calls that read the counters. */
async function commandsRun(fx: Fixture, nodes = [0, 1, 2, 3, 4]): Promise<number> {
  let calls = 0;
  for (const i of nodes) {
    const info = await fx.node(i).info('commandstats');
    for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) if (m[1] !== 'info') calls += Number(m[2]);
  }
  return calls;
}

/** Resolves once `redlock` has a local waiter queued for a hand-off (its `wait` event with no node outcomes). */
function localWait(redlock: Redlock): Promise<void> {
  return new Promise((resolve) => {
    const off = redlock.on('wait', (e) => {
      if (e.nodes.length > 0) return;
      off();
      resolve();
    });
  });
}

/** Records `acquired` events (in order) of the given Redlocks, tagged with the instance's index. */
/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

function recordAcquired(redlocks: readonly Redlock[]): Array<RedlockEventMap['acquired'] & { instance: number }> {
  const seen: Array<RedlockEventMap['acquired'] & { instance: number }> = [];
  redlocks.forEach((r, instance) => r.on('acquired', (e) => seen.push({ ...e, instance })));
  return seen;
}

/** Runs `workers` loops of `rounds` sections each on `resource` over `redlocks`, recording each section's interval. */
async function contend(
  redlocks: readonly Redlock[],
  resource: string,
  { workers, rounds, fencing = false }: { workers: number; rounds: number; fencing?: boolean },
  fx: Fixture,
): Promise<{ intervals: Interval[]; tokens: Array<{ start: number; token: bigint }> }> {
  const intervals: Interval[] = [];
  const tokens: Array<{ start: number; token: bigint }> = [];
  const loop = async (redlock: Redlock): Promise<void> => {
    for (let i = 0; i < rounds; i++) {
      await redlock.using(
        resource,
        10_000,
        async (lock) => {
          const start = performance.now();
          if (lock.fencingToken !== undefined) tokens.push({ start, token: lock.fencingToken });
          // Real I/O inside the section: an overlapping holder would interleave here.
          await fx.node(0).ping();
          intervals.push({ kind: 'held', start, end: performance.now() });
        },
        { fencing, retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } },
      );
    }
  };
  await Promise.all(redlocks.flatMap((r) => Array.from({ length: workers }, () => loop(r))));
  return { intervals, tokens };
}

/** No bound in the way of a single hand-off (a bound reached sends one PUBSUB NUMSUB). */
const ALONE = { cohort: { maxHoldMs: Infinity } } as const;

/** Redlocks a test makes itself (subclasses), closed at its end. */
const closeLater: Redlock[] = [];

describe('lock cohorting', () => {
  const fx = useFixture(5);

  it('keeps 16 workers of one Redlock on one key mutually exclusive, handing off locally', async () => {
    const resource = uniqueResource('cohort-mutex');
    const redlock = fx.redlock();
    const acquired = recordAcquired([redlock]);
    const { intervals } = await contend([redlock], resource, { workers: 16, rounds: 10 }, fx);

    expect(intervals).toHaveLength(160);
    expect(maxOverlap(intervals)).toBe(1);
    // Cohorting was exercised: most sections came by hand-off.
    expect(acquired.filter((e) => e.handoff).length).toBeGreaterThan(80);
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'every key was released');
  });

  it('keeps 3 Redlocks x 6 workers mutually exclusive; the lock moves between instances too', async () => {
    const resource = uniqueResource('cohort-mutex-3');
    const redlocks = [0, 1, 2].map(() => fx.redlock({ cohort: { maxHandoffs: 4 } }));
    const acquired = recordAcquired(redlocks);
    const { intervals } = await contend(redlocks, resource, { workers: 6, rounds: 8 }, fx);

    expect(intervals).toHaveLength(144);
    expect(maxOverlap(intervals)).toBe(1);
    expect(acquired.filter((e) => e.handoff).length).toBeGreaterThan(0);
    // Every instance got its turn on the nodes, and every one finished its sections.
    for (let i = 0; i < 3; i++) expect(acquired.filter((e) => e.instance === i && !e.handoff).length).toBeGreaterThan(0);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'every key was released');
  });

  it('makes the previous holder inert: its release, extend and fence never touch the new holder', async () => {
    const resource = uniqueResource('cohort-stale');
    const redlock = fx.redlock(ALONE);
    const first = await redlock.acquire(resource, 10_000);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 10_000);
    await queued;
    // An extension of the first holder still in flight when it hands off.
    const inFlight = first.extend(10_000);
    const result = await first.release();
    const second = await next;
    await inFlight;

    expect(result).toEqual({ released: 0, nodes: [], handedOff: true });
    expect(second).not.toBe(first);
    expect(first.state).toBe('released');
    expect(first.signal.aborted).toBe(false);
    // The documented results of a released Lock, and nothing sent on its behalf.
    expect(await first.release()).toBe(result);
    const extendError = await rejection(first.extend(10_000));
    expect(extendError).toBeInstanceOf(LockLostError);
    expect((extendError as LockLostError).reason).toBe('released');
    expect(await rejection(first.fence())).toBeInstanceOf(LockLostError);
    // Even the Redlock's own operations refuse it (the generation check behind the Lock's own state).
    expect(await redlock.ops.release(first)).toEqual(result);
    expect(await rejection(redlock.ops.extend(first, 10_000))).toBeInstanceOf(LockLostError);
    expect(await rejection(redlock.ops.fence!(first))).toBeInstanceOf(LockLostError);

    // The keys are still held, by the new holder, which can extend and release them.
    await fx.settled(resource, second.value);
    expect(second.state).toBe('held');
    await second.extend(10_000);
    expect(redlock.activeLocks).toBe(1);
    const released = await second.release();
    expect(released.released).toBeGreaterThanOrEqual(3);
    expect(released.handedOff).toBeUndefined();
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'the new holder released the keys');
  });

  it('sends no Redis command for an unfenced local hand-off', async () => {
    const resource = uniqueResource('cohort-commands');
    const redlock = fx.redlock(ALONE);
    const first = await redlock.acquire(resource, 10_000);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 10_000);
    await queued;
    await fx.settled(resource, first.value);
    const before = await commandsRun(fx);
    await first.release();
    const second = await next;
    const after = await commandsRun(fx);

    expect(after - before).toBe(0);
    await second.release();
  });

  it('describes each local holder as its own acquisition in events', async () => {
    const resource = uniqueResource('cohort-events');
    const redlock = fx.redlock(ALONE);
    const acquired = recordAcquired([redlock]);
    const releases: Array<{ handoff?: true; released: number }> = [];
    redlock.on('release', (e) => releases.push(e));
    const first = await redlock.acquire(resource, 10_000);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 5_000);
    await queued;
    await first.release();
    const second = await next;
    await second.release();

    expect(acquired.map((e) => e.handoff ?? false)).toEqual([false, true]);
    expect(acquired[1]).toMatchObject({ resources: [resource], ttlMs: 5_000, nodes: [], handoff: true });
    expect(releases[0]).toMatchObject({ handoff: true, released: 0 });
    expect(releases[1]!.handoff).toBeUndefined();
    expect(releases[1]!.released).toBeGreaterThanOrEqual(3);
  });

  it('gives each fenced local holder a strictly higher token, within and across instances', async () => {
    const resource = uniqueResource('cohort-fencing');
    const redlocks = [fx.redlock(), fx.redlock()];
    const acquired = recordAcquired(redlocks);
    const { intervals, tokens } = await contend(redlocks, resource, { workers: 5, rounds: 6, fencing: true }, fx);

    expect(maxOverlap(intervals)).toBe(1);
    expect(tokens).toHaveLength(60);
    const ordered = [...tokens].sort((a, b) => a.start - b.start);
    for (let i = 1; i < ordered.length; i++) expect(ordered[i]!.token).toBeGreaterThan(ordered[i - 1]!.token);
    expect(acquired.filter((e) => e.handoff).length).toBeGreaterThan(0);
  });

  it('never hands a stale token to a fenced waiter when the fencing round fails (majority paused)', async () => {
    const resource = uniqueResource('cohort-fence-fail');
    const redlock = fx.redlock({ ...ALONE, nodeTimeoutMs: 100 });
    const acquired = recordAcquired([redlock]);
    const first = await redlock.acquire(resource, 10_000, { fencing: true });
    await fx.settled(resource, first.value);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 10_000, { fencing: true, timeoutMs: 1_500 });
    await queued;
    for (const i of [0, 1, 2]) fx.cluster.servers[i]!.pause();

    const result = await first.release();
    const error = await rejection(next);

    // No hand-off: the release went to the nodes (those that answered), and the waiter acquired on the nodes, which failed.
    expect(result.handedOff).toBeUndefined();
    expect(error instanceof QuorumUnavailableError || error instanceof LockNotAcquiredError).toBe(true);
    expect(acquired.filter((e) => e.handoff)).toHaveLength(0);
    fx.resumeAll();
    // Once the nodes are back, a new acquisition's token is above the first holder's.
    const later = await redlock.acquire(resource, 10_000, { fencing: true, timeoutMs: 10_000 });
    expect(later.fencingToken!).toBeGreaterThan(first.fencingToken!);
    await later.release();
  });

  it('extends a lock with little validity left before handing it off', async () => {
    const resource = uniqueResource('cohort-validity');
    const redlock = fx.redlock(ALONE);
    const first = await redlock.acquire(resource, 400);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 20_000);
    await queued;
    await first.release();
    const second = await next;

    // The successor's validity is what it asked for minus drift and one round, not the 400 ms left.
    expect(second.remainingMs).toBeGreaterThan(20_000 * (2 / 3));
    const ttls = await Promise.all([0, 1, 2, 3, 4].map((i) => fx.node(i).pttl(lockKey(resource))));
    expect(ttls.filter((t) => t > 10_000).length).toBeGreaterThanOrEqual(3);
    await second.release();
  });

  it('does not hand off a lost lock: the waiter acquires on the nodes', async () => {
    const resource = uniqueResource('cohort-lost');
    const redlock = fx.redlock(ALONE);
    const acquired = recordAcquired([redlock]);
    const first = await redlock.acquire(resource, 300);
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 10_000, { retry: { retries: Infinity, delayMs: 10, jitterMs: 10 } });
    await queued;
    // Nobody extends it: it expires (its signal aborts), and the waiter takes the lock on the nodes.
    const second = await next;
    expect(first.state).toBe('lost');
    expect(acquired.map((e) => e.handoff ?? false)).toEqual([false, false]);
    expect((await first.release()).handedOff).toBeUndefined();
    // A majority holds the new owner's key (where the old key had not yet expired, its SET NX lost).
    await until(async () => (await fx.values(resource)).filter((v) => v === second.value).length >= 3, 'a majority holds the new key');
    await second.release();
  });

  it('hands off only to an exact same key set, in any order', async () => {
    const [a, b] = [uniqueResource('cohort-multi-a'), uniqueResource('cohort-multi-b')];
    const redlock = fx.redlock(ALONE);
    const acquired = recordAcquired([redlock]);
    const first = await redlock.acquire([a, b], 10_000);
    const queued = localWait(redlock);
    const sameSet = redlock.acquire([b, a], 10_000);
    await queued;
    const subset = redlock.acquire(a, 10_000, { retry: { retries: Infinity, delayMs: 10, jitterMs: 10 } });
    await first.release();
    const second = await sameSet;
    expect(acquired.at(-1)).toMatchObject({ resources: [b, a], handoff: true });
    await second.release();
    const third = await subset;
    expect(acquired.at(-1)!.handoff).toBeUndefined();
    await third.release();
  });

  it('lets a waiter queued for a hand-off leave at once when its signal aborts', async () => {
    const resource = uniqueResource('cohort-abort');
    const redlock = fx.redlock(ALONE);
    const first = await redlock.acquire(resource, 10_000);
    const controller = new AbortController();
    const queued = localWait(redlock);
    const next = redlock.acquire(resource, 10_000, { signal: controller.signal });
    await queued;
    controller.abort(new Error('changed my mind'));
    expect(((await rejection(next)) as Error).message).toBe('changed my mind');
    // Nobody is queued any more: the release goes to the nodes.
    const result = await first.release();
    expect(result.handedOff).toBeUndefined();
    expect(result.released).toBeGreaterThanOrEqual(3);
  });

  it('rejects waiters queued for a hand-off with RedlockClosedError on close, leaving no key behind', async () => {
    const resource = uniqueResource('cohort-close');
    const redlock = fx.redlock(ALONE);
    await redlock.acquire(resource, 10_000);
    const queued = localWait(redlock);
    // No retry budget, so no timer: only close() can end this wait.
    const next = redlock.acquire(resource, 10_000, { retry: { retries: Infinity } });
    await queued;
    await redlock.close();
    expect(await rejection(next)).toBeInstanceOf(RedlockClosedError);
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'close released the keys');
  });

  it('gives another instance the lock after maxHandoffs consecutive local hand-offs', async () => {
    const resource = uniqueResource('cohort-max-handoffs');
    const key = lockKey(resource);
    const busy = fx.redlock({ cohort: { maxHandoffs: 3, maxHoldMs: Infinity } });
    const other = new ProbedRedlock(fx.urls, { onWarning: () => undefined });
    try {
      const order: string[] = [];
      busy.on('acquired', (e) => order.push(e.handoff ? 'hand-off' : 'busy'));
      other.on('acquired', () => order.push('other'));
      const first = await busy.acquire(resource, 60_000);
      // Five more acquisitions of the busy instance wait for a local hand-off (they send nothing).
      const local = Array.from({ length: 5 }, () => busy.acquire(resource, 60_000, { timeoutMs: 30_000 }));
      // The other instance queues on the key's arbiter and parks there.
      const othersLock = other.acquire(resource, 60_000, { timeoutMs: 30_000 });
      await until(
        () => other.notices.places.waitingFor(key) === 1 && other.notices.places.inQueue(key) && other.notices.stats.armed === 1,
        'the other instance is queued',
      );
      // Three hand-offs are within the bound; the fourth release counts the queue, finds the other
      // instance there and gives the lock back to the nodes, which wakes it.
      await first.release();
      for (let i = 0; i < 3; i++) await (await local[i]!).release();
      const taken = await othersLock;
      expect(order).toEqual(['busy', 'hand-off', 'hand-off', 'hand-off', 'other']);
      // The busy instance's two waiters left queued behind it get their turn next (by hand-off, or
      // on the nodes when one was between two waits as the other won).
      await taken.release();
      for (const lock of local.slice(3)) await (await lock).release();
      expect(order.slice(5)).toHaveLength(2);
      expect(order[5]).toBe('busy');
    } finally {
      await other.close();
    }
  });

  it('gives another instance the lock once a run of hand-offs reaches maxHoldMs', async () => {
    const resource = uniqueResource('cohort-max-hold');
    const busy = fx.redlock({ cohort: { maxHandoffs: Infinity, maxHoldMs: 30 } });
    const other = fx.redlock();
    const acquired = recordAcquired([busy, other]);
    let stop = false;
    const loop = async (): Promise<void> => {
      while (!stop) await busy.using(resource, 10_000, () => fx.node(0).ping(), { retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } });
    };
    const workers = [loop(), loop(), loop(), loop()];
    await until(() => acquired.some((e) => e.handoff), 'the busy instance hands off');
    for (let i = 0; i < 3; i++) {
      const lock = await other.acquire(resource, 10_000, { timeoutMs: 10_000 });
      await lock.release();
    }
    stop = true;
    await Promise.all(workers);
    expect(acquired.filter((e) => e.instance === 1)).toHaveLength(3);
  });

  it('gives way at the bounds when waiters poll instead of subscribing (invisible to PUBSUB NUMSUB)', async () => {
    const resource = uniqueResource('cohort-polling');
    const polling = (): Redlock => {
      // Release notices off: waits are plain delays, as when no subscriber can be opened.
      class PollingRedlock extends Redlock {
        protected override waitForRetry(_keys: readonly string[], ms: number): Promise<void> {
          return new Promise((resolve) => setTimeout(resolve, ms));
        }
      }
      const r = new PollingRedlock(fx.urls, { onWarning: () => undefined, cohort: { maxHandoffs: 3, maxHoldMs: Infinity } });
      closeLater.push(r);
      return r;
    };
    const busy = polling();
    const other = polling();
    const acquired = recordAcquired([busy, other]);
    let stop = false;
    const loop = async (): Promise<void> => {
      while (!stop) await busy.using(resource, 10_000, () => fx.node(0).ping(), { retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } });
    };
    const workers = [loop(), loop(), loop(), loop()];
    await until(() => acquired.some((e) => e.handoff), 'the busy instance hands off');
    try {
      for (let i = 0; i < 3; i++) {
        const lock = await other.acquire(resource, 10_000, { timeoutMs: 10_000, retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } });
        await lock.release();
      }
    } finally {
      stop = true;
      await Promise.all(workers);
      await Promise.all(closeLater.splice(0).map((r) => r.close()));
    }
    expect(acquired.filter((e) => e.instance === 1)).toHaveLength(3);
  });

  it('keeps handing off past the bounds while no other process waits', async () => {
    const resource = uniqueResource('cohort-alone');
    const redlock = fx.redlock({ cohort: { maxHandoffs: 2, maxHoldMs: Infinity } });
    const acquired = recordAcquired([redlock]);
    await contend([redlock], resource, { workers: 4, rounds: 6 }, fx);
    // Runs of hand-offs longer than the bound: each PUBSUB NUMSUB (every 2) found nobody else waiting.
    let run = 0;
    let longest = 0;
    for (const e of acquired) {
      run = e.handoff ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    expect(acquired).toHaveLength(24);
    expect(longest).toBeGreaterThan(2);
  });

  it('is off with cohort: false, and its options are checked', () => {
    expect(fx.redlock({ cohort: false }).options.cohort).toBe(false);
    expect(fx.redlock().options.cohort).toEqual({ maxHandoffs: 16, maxHoldMs: 100 });
    expect(() => fx.redlock({ cohort: { maxHandoffs: 0 } })).toThrow(RedlockArgumentError);
    expect(() => fx.redlock({ cohort: { maxHandoffs: 1.5 } })).toThrow(/cohort\.maxHandoffs/);
    expect(() => fx.redlock({ cohort: { maxHoldMs: -1 } })).toThrow(/cohort\.maxHoldMs/);
    expect(() => fx.redlock({ cohort: true as unknown as false })).toThrow(/cohort must be false or/);
  });

  it('does not cohort with cohort: false (every acquisition goes to the nodes)', async () => {
    const resource = uniqueResource('cohort-off');
    const redlock = fx.redlock({ cohort: false });
    const acquired = recordAcquired([redlock]);
    const held: Lock = await redlock.acquire(resource, 10_000);
    const next = redlock.acquire(resource, 10_000, { retry: { retries: Infinity, delayMs: 10, jitterMs: 10 } });
    await held.release();
    await (await next).release();
    expect(acquired.map((e) => e.handoff ?? false)).toEqual([false, false]);
  });
});
