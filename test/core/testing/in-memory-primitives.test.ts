/**
 * Read-write locks, semaphores and fair locks over in-memory nodes: the core Redlock sends
 * the primitives' scripts, which the in-memory node answers in JavaScript (no Redis server in
 * this file). Each check runs with one of the 3 nodes stopped, so the quorum is exactly the
 * two nodes left and every grant depends on both of them answering as Redis would.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, Redlock, type Lock, type RedlockOptions } from '@redlock-nest/core';
import { InMemoryRedisServer } from '@redlock-nest/core/testing';
import { hold, maxOverlap, overlapsBetween, type Interval } from '../intervals.js';
import { DEFAULT_PREFIX, lockKey, rejection, uniqueResource, until } from '../../harness/test-utils.js';
import { arbiterOf } from '../../../packages/core/src/rounds/arbiter-round.js';

const readers = (resource: string): string => `${DEFAULT_PREFIX}rw-readers:${resource}`;
const writers = (resource: string): string => `${DEFAULT_PREFIX}rw-writers:${resource}`;
const slot = (resource: string, i: number): string => `${DEFAULT_PREFIX}semaphore:${resource}:${i}`;
const queueKey = (resource: string): string => `${DEFAULT_PREFIX}fair-queue:${resource}`;
const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits long enough that only a notice moves a waiter on. */
const SLOW_POLL = { retries: Infinity, delayMs: 60_000, jitterMs: 0 };
const BUSY = { nodeTimeoutMs: 100, retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } } as const;

describe('primitives over in-memory nodes (one of 3 stopped)', () => {
  let servers: InMemoryRedisServer[] = [];
  const redlocks: Redlock[] = [];
  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((r) => r.close()));
    for (const s of servers) s.close();
    servers = [];
  });

  /** 3 nodes, `down` stopped; Redlocks made by `redlock()` are separate processes' queues and clients. */
  function setup(down: number): { redlock: (options?: RedlockOptions) => Redlock; up: InMemoryRedisServer[] } {
    servers = Array.from({ length: 3 }, () => new InMemoryRedisServer());
    servers[down]!.stop();
    const redlock = (options: RedlockOptions = {}): Redlock => {
      const r = new Redlock(
        servers.map((s) => s.client()),
        { onWarning: () => {}, ...options },
      );
      redlocks.push(r);
      return r;
    };
    return { redlock, up: servers.filter((_, i) => i !== down) };
  }

  describe('read-write lock', () => {
    it('lets readers share, keeps writers and plain locks out, and frees the key with the last reader', async () => {
      const { redlock, up } = setup(0);
      const r = redlock();
      const resource = uniqueResource('mem-rw-share');
      const a = await r.acquire(resource, 10_000, { mode: 'read' });
      const b = await r.acquire(resource, 10_000, { mode: 'read' });
      expect(
        up.map((s) =>
          s
            .members(readers(resource))
            .map((m) => m.member)
            .sort(),
        ),
      ).toEqual([[a.value, b.value].sort(), [a.value, b.value].sort()]);
      expect(await r.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
      expect(await r.tryAcquire(resource, 10_000)).toBeNull();
      await a.release();
      expect(await r.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
      await b.release();
      expect(up.map((s) => s.get(lockKey(resource)))).toEqual([undefined, undefined]);
      expect(up.map((s) => s.members(readers(resource)))).toEqual([[], []]);
      const w = await r.acquire(resource, 10_000, { mode: 'write', fencing: true });
      expect(up.map((s) => s.get(lockKey(resource)))).toEqual([w.value, w.value]);
      expect(await r.tryAcquire(resource, 10_000, { mode: 'read' })).toBeNull();
      expect(await r.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
      await w.release();
      // A reader learns the last writer's token.
      const after = await r.acquire(resource, 10_000, { mode: 'read', fencing: true });
      expect(after.fencingToken).toBe(w.fencingToken);
      await after.release();
    });

    it('makes a waiting writer block new readers, and wakes it when the last reader leaves', async () => {
      const { redlock, up } = setup(1);
      const r = redlock();
      const resource = uniqueResource('mem-rw-pref');
      const reader = await r.acquire(resource, 60_000, { mode: 'read' });
      // The poll is a minute away: only the last reader's release notice wakes the writer in time.
      const writer = redlock({ retry: SLOW_POLL }).acquire(resource, 10_000, { mode: 'write', timeoutMs: 30_000 });
      await until(() => up.every((s) => s.members(writers(resource)).length === 1), 'the writer waits on both nodes');
      expect(await r.tryAcquire(resource, 10_000, { mode: 'read' })).toBeNull();
      await reader.release();
      const w = await writer;
      // Winning removed its waiting entry: readers get in again after it.
      expect(up.map((s) => s.members(writers(resource)))).toEqual([[], []]);
      await w.release();
      await (await r.acquire(resource, 10_000, { mode: 'read' })).release();
    });

    it("frees a reader's share when its lease ends, and a writer that gave up stops blocking readers", async () => {
      const { redlock, up } = setup(0);
      const r = redlock();
      const resource = uniqueResource('mem-rw-expiry');
      const short = await r.acquire(resource, 200, { mode: 'read' });
      // The writer gets in once the lease ends, without a release (the marker expires with it).
      const w = await r.acquire(resource, 10_000, { mode: 'write', timeoutMs: 5_000 });
      expect(short.remainingMs).toBe(0);
      expect((await short.release()).released).toBe(0);
      const gaveUp = await rejection(redlock().acquire(resource, 60_000, { mode: 'write', timeoutMs: 50 }));
      expect(gaveUp).toBeInstanceOf(LockNotAcquiredError);
      await w.release();
      // Its waiting entry is withdrawn: a reader is not refused for it.
      await until(() => up.every((s) => s.members(writers(resource)).length === 0), 'the waiting writer withdrew');
      await (await r.acquire(resource, 10_000, { mode: 'read', retry: false })).release();
    });

    it('extends a reader owner-checked, and a reader that lost its lease cannot extend', async () => {
      const { redlock, up } = setup(2);
      const r = redlock();
      const resource = uniqueResource('mem-rw-extend');
      const a = await r.acquire(resource, 10_000, { mode: 'read' });
      await a.extend(30_000);
      expect(up.every((s) => s.pttl(lockKey(resource)) > 10_000)).toBe(true);
      for (const s of up) s.delete(readers(resource));
      expect(await rejection(a.extend(30_000))).toMatchObject({ name: 'LockLostError' });
    });

    it('never lets a reader overlap a writer, nor two writers overlap', async () => {
      const { redlock } = setup(0);
      const resource = uniqueResource('mem-rw-mix');
      const intervals: Interval[] = [];
      const loop = async (r: Redlock, mode: 'read' | 'write', rounds: number): Promise<void> => {
        for (let i = 0; i < rounds; i++) {
          const lock: Lock = await r.acquire(resource, 2_000, { mode });
          await hold(lock, mode, intervals, () => tick(mode === 'read' ? 4 : 2));
        }
      };
      const [x, y] = [redlock(BUSY), redlock(BUSY)];
      await Promise.all([x, y].flatMap((r) => [loop(r, 'read', 10), loop(r, 'read', 10), loop(r, 'write', 6), loop(r, 'write', 6)]));
      expect(intervals.filter((i) => i.kind === 'write')).toHaveLength(24);
      expect(overlapsBetween(intervals, 'read', 'write')).toBe(0);
      expect(maxOverlap(intervals, ['write'])).toBe(1);
      expect(maxOverlap(intervals, ['read'])).toBeGreaterThanOrEqual(2); // readers did share
    });
  });

  describe('semaphore', () => {
    it('grants N permits, refuses the next, and grants it again once one is released', async () => {
      const { redlock, up } = setup(0);
      const r = redlock();
      const resource = uniqueResource('mem-sem');
      const held: Lock[] = [];
      for (let i = 0; i < 3; i++) held.push(await r.acquire(resource, 10_000, { permits: 3 }));
      // Each holder owns a different slot, the same one on both nodes.
      for (const s of up) {
        const owners = [0, 1, 2].map((i) => s.get(slot(resource, i)));
        expect(owners.sort()).toEqual(held.map((l) => l.value).sort());
      }
      expect(await r.tryAcquire(resource, 10_000, { permits: 3 })).toBeNull();
      await held[1]!.release();
      const again = await r.acquire(resource, 10_000, { permits: 3 });
      expect(await r.tryAcquire(resource, 10_000, { permits: 3 })).toBeNull();
      await Promise.all([again, held[0]!, held[2]!].map((l) => l.release()));
      expect(up.flatMap((s) => [0, 1, 2].map((i) => s.get(slot(resource, i))))).toEqual(Array(6).fill(undefined));
    });

    it('takes the permit of a holder that expired, and never has more than N holders at once', async () => {
      const { redlock } = setup(2);
      const resource = uniqueResource('mem-sem-bound');
      const short = await redlock().acquire(resource, 200, { permits: 1 });
      const next = await redlock().acquire(resource, 10_000, { permits: 1, timeoutMs: 5_000 });
      expect(short.remainingMs).toBe(0);
      await next.release();
      const intervals: Interval[] = [];
      const loop = async (r: Redlock): Promise<void> => {
        for (let i = 0; i < 5; i++) {
          const lock = await r.acquire(resource, 2_000, { permits: 2 });
          await hold(lock, 'permit', intervals, () => tick(3));
        }
      };
      const [x, y] = [redlock(BUSY), redlock(BUSY)];
      await Promise.all([x, x, x, y, y, y].map(loop));
      expect(intervals).toHaveLength(30);
      expect(maxOverlap(intervals)).toBeLessThanOrEqual(2);
      expect(maxOverlap(intervals)).toBe(2); // both permits were used at once
    });

    it('under contention takes the arbiter’s slot on every node, and a failed attempt frees its slots without a notice', async () => {
      const { redlock, up } = setup(0);
      const r = redlock({ nodeTimeoutMs: 5_000 }); // its waits' channels linger past the test: contended
      const resource = uniqueResource('mem-sem-arbiter');
      const permits = 32;
      const slots = Array.from({ length: permits }, (_, s) => slot(resource, s));
      for (const s of up) for (const key of slots) s.set(key, 'x', 60_000);
      expect(await rejection(r.acquire(resource, 60_000, { permits, retry: { retries: 1, delayMs: 1, jitterMs: 0 } }))).toBeInstanceOf(
        LockNotAcquiredError,
      );
      // The arbiter has only slot 0 free, the other node every slot: asked for the arbiter's slot, both grant 0
      // at the first attempt. Asked both at once from a random slot, they would split (31 times in 32).
      const arbiter = servers[arbiterOf(r.nodes, slots[0]!, Infinity)]!;
      const other = up.find((s) => s !== arbiter)!;
      arbiter.delete(slots[0]!);
      for (const key of slots) other.delete(key);
      const lock = await r.tryAcquire(resource, 60_000, { permits });
      expect(lock?.keys).toEqual([slots[0]]);
      expect(up.map((s) => s.get(slots[0]!))).toEqual([lock!.value, lock!.value]);
      await lock!.release();
      // Slot 0 taken on one node, slot 1 on the other: each grants the other slot, no quorum of either.
      const split = uniqueResource('mem-sem-quiet');
      const channels = [slot(split, 0), slot(split, 1)];
      const heard: string[] = [];
      const listeners = up.map((s) => s.client());
      for (const l of listeners) l.on('message', (_channel: string, message: string) => heard.push(message));
      await Promise.all(listeners.map(async (l) => l.connect().then(() => l.subscribe(...channels))));
      up[0]!.set(channels[0]!, 'x', 60_000);
      up[1]!.set(channels[1]!, 'y', 60_000);
      expect(await redlock().tryAcquire(split, 60_000, { permits: 2 })).toBeNull();
      await until(() => up[0]!.get(channels[1]!) === undefined && up[1]!.get(channels[0]!) === undefined, 'the grants are freed');
      // A marker after the frees: a notice of theirs would have come before it.
      const publishers = up.map((s) => s.client());
      await Promise.all(publishers.map((p) => p.connect()));
      await Promise.all(publishers.flatMap((p) => channels.map((c) => p.call('PUBLISH', c, 'marker'))));
      await until(() => heard.length >= 4, 'the markers arrived');
      expect(heard).toEqual(['marker', 'marker', 'marker', 'marker']);
      await Promise.all([...listeners, ...publishers].map((l) => l.quit()));
    });
  });

  describe('fair lock', () => {
    /** Queues one waiter per Redlock, each queued before the next arrives, then releases `held`: the order of grants. */
    async function grantOrder(resource: string, held: Lock, waiters: Redlock[], up: InMemoryRedisServer[]): Promise<number[]> {
      const order: number[] = [];
      let inside = 0;
      const done: Array<Promise<void>> = [];
      for (const [i, r] of waiters.entries()) {
        const work = async (): Promise<void> => {
          inside++;
          expect(inside).toBe(1);
          order.push(i);
          await new Promise((resolve) => setImmediate(resolve));
          inside--;
        };
        done.push(r.using(resource, 10_000, work, { fair: true }));
        await until(() => up.every((s) => s.members(queueKey(resource)).length === i + 1), `${i + 1} waiter(s) queued`);
      }
      await held.release();
      await Promise.all(done);
      return order;
    }

    it('grants in order of arrival, each waiter woken by a notice naming it', async () => {
      const { redlock, up } = setup(1);
      const resource = uniqueResource('mem-fifo');
      const waiters = Array.from({ length: 4 }, () => redlock({ retry: SLOW_POLL }));
      const held = await redlock().acquire(resource, 10_000, { fair: true });
      expect(up.map((s) => s.members(queueKey(resource)))).toEqual([[], []]); // a free key: taken without queueing
      expect(await grantOrder(resource, held, waiters, up)).toEqual([0, 1, 2, 3]);
      // The poll is a minute away: every hand-off was a notice.
      expect(waiters.reduce((sum, w) => sum + w.fair.stats.notice, 0)).toBe(4);
      expect(up.map((s) => s.members(queueKey(resource)))).toEqual([[], []]);
    });

    it('keeps the order between waiters of one process, with growing fencing tokens', async () => {
      const { redlock, up } = setup(2);
      const resource = uniqueResource('mem-fifo-local');
      const waiter = redlock({ retry: SLOW_POLL });
      const held = await redlock().acquire(resource, 10_000, { fair: true, fencing: true });
      expect(await grantOrder(resource, held, [waiter, waiter, waiter], up)).toEqual([0, 1, 2]);
      const next = await waiter.acquire(resource, 10_000, { fair: true, fencing: true });
      expect(next.fencingToken! > held.fencingToken!).toBe(true);
      await next.release();
    });

    it('hands the place of a waiter that gave up to the next one', async () => {
      const { redlock, up } = setup(0);
      const resource = uniqueResource('mem-fifo-leave');
      const held = await redlock().acquire(resource, 10_000, { fair: true });
      const controller = new AbortController();
      const quitter = redlock({ retry: SLOW_POLL }).acquire(resource, 10_000, { fair: true, signal: controller.signal });
      await until(() => up.every((s) => s.members(queueKey(resource)).length === 1), 'the first waiter queued');
      const stays = redlock({ retry: SLOW_POLL }).acquire(resource, 10_000, { fair: true });
      await until(() => up.every((s) => s.members(queueKey(resource)).length === 2), 'the second waiter queued');
      controller.abort();
      await rejection(quitter);
      await until(() => up.every((s) => s.members(queueKey(resource)).length === 1), 'the first waiter left');
      await held.release();
      await (await stays).release();
    });
  });
});
