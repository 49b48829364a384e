/**
 * Semaphores on 5 real redis-server processes: at most N holders, a permit freed by release
 * or expiry, nodes that disagree on the free slot, contended attempts that agree on the
 * arbiter's slot, failed attempts that wake nobody, and the bound with a minority of nodes
 * killed, paused or restarted empty.
 */
import { describe, expect, it } from '@jest/globals';
import { LockLostError, LockNotAcquiredError, RedlockArgumentError, type Redlock } from '@redlock-nest/core';
import { DEFAULT_PREFIX, rejection, uniqueResource, until, useFixture } from '../helpers.js';
import { heal, hold, inject, maxOverlap, type Fault, type Interval } from '../intervals.js';
import { arbiterOf } from '../../../packages/core/src/rounds/arbiter-round.js';

const slot = (resource: string, i: number): string => `${DEFAULT_PREFIX}semaphore:${resource}:${i}`;
const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const ALL = [0, 1, 2, 3, 4];

describe('semaphore', () => {
  const fx = useFixture(5);

  it('grants N permits, refuses the next, and grants it again once one is released', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem-basic');
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await redlock.acquire(resource, 10_000, { permits: 3 }));
    expect(new Set(held.map((l) => l.value)).size).toBe(3);
    expect(await redlock.tryAcquire(resource, 10_000, { permits: 3 })).toBeNull();
    // A full semaphore says so, with its size (the Nest layer answers "all 3 permits of … are in use").
    const full = await rejection(redlock.acquire(resource, 10_000, { permits: 3, retry: false }));
    expect(full).toBeInstanceOf(LockNotAcquiredError);
    expect(full.permits).toBe(3);
    expect(full.message).toContain('all 3 permits are in use');
    // A semaphore is not the lock of the same name.
    const lock = await redlock.acquire(resource, 10_000);
    await lock.release();
    await held[1]!.release();
    const again = await redlock.acquire(resource, 10_000, { permits: 3 });
    expect(await redlock.tryAcquire(resource, 10_000, { permits: 3 })).toBeNull();
    await Promise.all([again, held[0]!, held[2]!].map((l) => l.release()));
  });

  it('frees an expired permit, extends and releases owner-checked', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem-expiry');
    const short = await redlock.acquire(resource, 300, { permits: 1 });
    // The waiter gets the permit when the holder's TTL runs out, without a release.
    const next = await redlock.acquire(resource, 10_000, { permits: 1, timeoutMs: 5_000 });
    expect(short.remainingMs).toBe(0);
    expect(await rejection(short.extend(1_000))).toBeInstanceOf(LockLostError);
    expect((await short.release()).released).toBe(0);
    await next.extend(20_000);
    expect(next.remainingMs).toBeGreaterThan(10_000);
    expect(await redlock.tryAcquire(resource, 10_000, { permits: 1 })).toBeNull();
    expect(await rejection(next.fence())).toBeInstanceOf(RedlockArgumentError);
    expect((await next.release()).released).toBeGreaterThanOrEqual(3);
  });

  it('keeps one slot on a quorum when nodes disagree on the free slot, and frees the other', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem-split');
    // Slot 0 taken on nodes 0-1, slot 1 on nodes 2-4: each node has exactly one free slot.
    await Promise.all([0, 1].map((i) => fx.node(i).set(slot(resource, 0), 'x', 'PX', 60_000)));
    await Promise.all([2, 3, 4].map((i) => fx.node(i).set(slot(resource, 1), 'y', 'PX', 60_000)));
    const lock = await redlock.acquire(resource, 10_000, { permits: 2 });
    // Nodes 2-4 granted slot 0 (a quorum): kept. Nodes 0-1 granted slot 1: freed at once.
    await until(
      async () => (await Promise.all([0, 1].map((i) => fx.node(i).get(slot(resource, 1))))).every((v) => v === null),
      'the minority grant is freed',
    );
    expect(await Promise.all([2, 3, 4].map((i) => fx.node(i).get(slot(resource, 0))))).toEqual([lock.value, lock.value, lock.value]);
    // Slot 0 is ours on a quorum and slot 1 is y's on a quorum: the semaphore is full.
    expect(await redlock.tryAcquire(resource, 10_000, { permits: 2 })).toBeNull();
    await lock.release();
  });

  it('frees a slot that a failed attempt was granted late (the scan after a refused SET NX ran after its release)', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem-late');
    expect(await redlock.tryAcquire(uniqueResource('warm'), 10_000, { permits: 2 })).not.toBeNull(); // connected
    // Full on nodes 0-2 (a quorum says "held"); node 3 has slot 1 free, node 4 none.
    await Promise.all([0, 1, 2, 4].map((i) => Promise.all([0, 1].map((s) => fx.node(i).set(slot(resource, s), 'x', 'PX', 60_000)))));
    await fx.node(3).set(slot(resource, 0), 'x', 'PX', 60_000);
    const scripts = async (): Promise<number> => {
      const info = await fx.node(3).info('commandstats');
      return [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    const before = await scripts();
    fx.cluster.server(3).pause();
    fx.cluster.server(4).pause();
    // Decided by nodes 0-2 while 3 and 4 are silent: the failed attempt's release is queued on node 3
    // behind its SET NX, and, when that SET NX (slot 0 first) is refused, before the slot scan.
    // A TTL longer than the waits below: a leaked slot would outlive them.
    expect(await redlock.tryAcquire(resource, 120_000, { permits: 2 })).toBeNull();
    fx.cluster.server(3).resume();
    fx.cluster.server(4).resume();
    // The release, the scan or a SET that landed, and the late grant's own release have run on node 3...
    await until(async () => (await scripts()) >= before + 2, 'node 3 answered the attempt');
    // ...and no slot is held there by the failed attempt's token.
    await until(async () => (await fx.node(3).get(slot(resource, 1))) === null, 'the late grant on node 3 is freed');
  });

  it('under contention asks the arbiter first, then the other nodes for the slot the arbiter granted', async () => {
    // A node timeout far beyond the test: the waits below keep the semaphore's channels subscribed (contended).
    const redlock = fx.redlock({ nodeTimeoutMs: 5_000 });
    const resource = uniqueResource('sem-arbiter');
    const permits = 32;
    const arbiter = arbiterOf(redlock.nodes, slot(resource, 0), Infinity);
    const slots = Array.from({ length: permits }, (_, s) => slot(resource, s));
    await Promise.all(ALL.map((i) => Promise.all(slots.map((key) => fx.node(i).set(key, 'x', 'PX', 60_000)))));
    // A full semaphore: this acquisition waits once, so the next one of this Redlock counts as contended.
    const full = await rejection(redlock.acquire(resource, 60_000, { permits, retry: { retries: 1, delayMs: 1, jitterMs: 0 } }));
    expect(full).toBeInstanceOf(LockNotAcquiredError);
    // The arbiter has slot 0 free only; the other nodes have every slot free. Asked all at once from a
    // random slot, those would grant that slot (a quorum of it, 31 times in 32); asked for the arbiter's slot, they grant 0.
    await fx.node(arbiter).del(slots[0]!);
    await Promise.all(ALL.filter((i) => i !== arbiter).map((i) => fx.node(i).del(...slots)));
    const lock = await redlock.acquire(resource, 60_000, { permits });
    expect(lock.keys).toEqual([slots[0]]);
    await until(
      async () => (await Promise.all(ALL.map((i) => fx.node(i).get(slots[0]!)))).every((v) => v === lock.value),
      'every node granted slot 0',
    );
    // No other slot was taken anywhere (the other nodes were asked for slot 0 alone).
    const others = await Promise.all(ALL.map((i) => Promise.all(slots.slice(1).map((key) => fx.node(i).get(key)))));
    expect(others.flat().filter((v) => v === lock.value)).toEqual([]);
    await lock.release();
  });

  it('frees the slots of a failed attempt without a release notice', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem-quiet');
    const channels = [slot(resource, 0), slot(resource, 1)];
    // Slot 0 taken on nodes 0-2, slot 1 on nodes 2-4: nodes 0-1 grant slot 1, nodes 3-4 slot 0, no quorum of either.
    await Promise.all([0, 1, 2].map((i) => fx.node(i).set(channels[0]!, 'x', 'PX', 60_000)));
    await Promise.all([2, 3, 4].map((i) => fx.node(i).set(channels[1]!, 'y', 'PX', 60_000)));
    const heard: string[] = [];
    const listeners = [0, 1, 3, 4].map((i) => {
      const sub = fx.client(i);
      sub.on('message', (channel: string, message: string) => heard.push(`${i} ${channel} ${message}`));
      return sub;
    });
    await Promise.all(listeners.map(async (sub) => sub.connect().then(() => sub.subscribe(...channels))));
    expect(await redlock.tryAcquire(resource, 60_000, { permits: 2 })).toBeNull();
    await until(
      async () =>
        (await Promise.all([0, 1].map((i) => fx.node(i).get(channels[1]!)))).every((v) => v === null) &&
        (await Promise.all([3, 4].map((i) => fx.node(i).get(channels[0]!)))).every((v) => v === null),
      'the partial grants are freed',
    );
    // A marker after the frees, on the same channels: a notice of theirs would have come before it.
    await Promise.all([0, 1, 3, 4].map((i) => Promise.all(channels.map((c) => fx.node(i).publish(c, 'marker')))));
    await until(() => heard.filter((h) => h.endsWith(' marker')).length === 8, 'the markers arrived');
    expect(heard.filter((h) => !h.endsWith(' marker'))).toEqual([]);
  });

  it('refuses bad permits, fencing, a mode and several resources, naming the fix', async () => {
    const redlock = fx.redlock();
    for (const [options, text] of [
      [{ permits: 0 }, /at least 1/],
      [{ permits: 2.5 }, /whole number/],
      [{ permits: 5000 }, /at most 1024/],
      [{ permits: 2, fencing: true }, /no fencing token/],
      [{ permits: 2, mode: 'read' }, /do not combine/],
    ] as const) {
      const err = await rejection(redlock.acquire('sem-bad', 1_000, options));
      expect(err).toBeInstanceOf(RedlockArgumentError);
      expect(String(err.message)).toMatch(text);
    }
    expect(String((await rejection(redlock.acquire(['a', 'b'], 1_000, { permits: 2 }))).message)).toMatch(/one resource/);
  });

  describe.each<[Fault]>([['none'], ['kill'], ['pause'], ['restart-empty']])('with a minority of nodes: %s', (fault) => {
    it('never has more than N holders at once, and does reach N', async () => {
      const resource = uniqueResource(`sem-${fault}`);
      const permits = 3;
      const options = { nodeTimeoutMs: 100, retry: { retries: Infinity, delayMs: 5, jitterMs: 20 } } as const;
      const redlocks: Redlock[] = [fx.redlock(options), fx.redlock(options), fx.redlock(options)];
      const intervals: Interval[] = [];
      let done = 0;
      const loop = async (redlock: Redlock): Promise<void> => {
        for (let i = 0; i < 10; i++) {
          const lock = await redlock.acquire(resource, 2_000, { permits });
          await hold(lock, 'permit', intervals, () => tick(5));
          done++;
        }
      };
      const run = Promise.all(redlocks.flatMap((r) => [loop(r), loop(r), loop(r)]));
      await until(() => done >= 10, 'the run is under way');
      await inject(fault, fx.cluster, [3, 4], redlocks);
      await run;
      await heal(fault, fx.cluster, [3, 4]);
      expect(intervals).toHaveLength(90);
      expect(maxOverlap(intervals)).toBeLessThanOrEqual(permits);
      expect(maxOverlap(intervals)).toBe(permits);
      // Every holder and every failed attempt cleaned up after itself on the nodes that stayed up.
      await until(
        async () =>
          (await Promise.all(ALL.slice(0, 3).map((i) => fx.node(i).keys(`${DEFAULT_PREFIX}semaphore:${resource}:*`)))).every(
            (k) => k.length === 0,
          ),
        'every slot was freed',
      );
    }, 120_000); // a bound, not a speed claim: what is asserted is the exclusion (one run once stalled past 30 s)
  });
});
