/**
 * Read-write locks, semaphores and fair locks on a real Redis Cluster (3 masters + 3 replicas)
 * as the lock node, plus the operator tools there: every key of a primitive carries its
 * resource's hash tag, so each script runs in one slot (a key outside it fails with CROSSSLOT
 * or "non local key"). Several resources in different slots run at once; one test kills the
 * master of a resource's slot mid-run with replicaSync.
 */
import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, QuorumUnavailableError, type Lock, type Redlock, type RedlockOptions } from '@redlock-nest/core';
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import { rejection, uniqueResource, until } from '../harness/test-utils.js';
import { hold, maxOverlap, overlapsBetween, type Interval } from '../core/intervals.js';
import { resourcesInDifferentSlots, useClusterFixture } from './helpers.js';

/** Waits long enough that only a notice moves a waiter on. */
const SLOW_POLL = { retries: Infinity, delayMs: 60_000, jitterMs: 0 };
const BUSY = { nodeTimeoutMs: 500, retry: { retries: Infinity, delayMs: 5, jitterMs: 20 } } satisfies RedlockOptions;
const key = (kind: string, resource: string): string => `redlock:${kind}:${hashTag(resource)}`;
const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('primitives on a Redis Cluster node', () => {
  const fx = useClusterFixture();

  it('read-write lock: readers share, a write lock and a plain lock exclude each other and the readers, every key in one slot', async () => {
    const a = fx.redlock();
    const b = fx.redlock();
    const resource = uniqueResource('rw');
    const direct = fx.direct();
    const r1 = await a.acquire(resource, 10_000, { mode: 'read' });
    const r2 = await b.acquire(resource, 10_000, { mode: 'read', fencing: true });
    expect(await direct.zcard(key('rw-readers', resource))).toBe(2);
    expect(hashSlot(key('rw-readers', resource))).toBe(hashSlot(key('lock', resource)));
    expect(await b.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
    expect(await b.tryAcquire(resource, 10_000)).toBeNull();
    await r1.extend(10_000);
    await r1.release();
    await r2.release();
    // The same lock key as a plain lock: each excludes the other.
    const w = await a.acquire(resource, 10_000, { mode: 'write', fencing: true });
    expect(await direct.get(key('lock', resource))).toBe(w.value);
    expect(await b.tryAcquire(resource, 10_000)).toBeNull();
    expect(await b.tryAcquire(resource, 10_000, { mode: 'read' })).toBeNull();
    await w.release();
    const plain = await b.acquire(resource, 10_000);
    expect(await a.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
    await plain.release();
  });

  it('readers never overlap a writer (nor a plain lock over all resources), on three resources in different slots at once', async () => {
    const resources = resourcesInDifferentSlots(3, 'rw-run');
    const redlocks = [fx.redlock(BUSY), fx.redlock(BUSY)];
    const intervals = new Map<string, Interval[]>(resources.map((r) => [r, []]));
    const loop = async (redlock: Redlock, resource: string, mode: 'read' | 'write', rounds: number): Promise<void> => {
      for (let i = 0; i < rounds; i++) {
        const lock = await redlock.acquire(resource, 5_000, { mode });
        await hold(lock, mode, intervals.get(resource)!, () => tick(mode === 'read' ? 8 : 3));
      }
    };
    // A plain lock over the three slots at once counts as a writer on each.
    const across = async (redlock: Redlock): Promise<void> => {
      for (let i = 0; i < 3; i++) {
        const lock = await redlock.acquire(resources, 5_000);
        const shared: Interval[] = [];
        await hold(lock, 'write', shared, () => tick(3));
        for (const r of resources) intervals.get(r)!.push(...shared);
      }
    };
    await Promise.all([
      ...redlocks.flatMap((redlock) =>
        resources.flatMap((r) => [loop(redlock, r, 'read', 8), loop(redlock, r, 'read', 8), loop(redlock, r, 'write', 4)]),
      ),
      across(redlocks[0]!),
    ]);
    for (const r of resources) {
      const run = intervals.get(r)!;
      expect(run.filter((i) => i.kind === 'write')).toHaveLength(8 + 3);
      expect(overlapsBetween(run, 'read', 'write')).toBe(0);
      expect(maxOverlap(run, ['write'])).toBe(1);
    }
    // Readers did share (otherwise this would test a mutex).
    expect(Math.max(...resources.map((r) => maxOverlap(intervals.get(r)!, ['read'])))).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('a semaphore never has more than N holders, on two resources in different slots at once; its slots share the slot', async () => {
    const resources = resourcesInDifferentSlots(2, 'sem');
    const redlocks = [fx.redlock(BUSY), fx.redlock(BUSY)];
    const permits = 3;
    const one = await redlocks[0]!.acquire(resources[0]!, 5_000, { permits });
    const direct = fx.direct();
    const slotKeys = Array.from({ length: permits }, (_, i) => `${key('semaphore', resources[0]!)}:${i}`);
    expect(new Set(slotKeys.map(hashSlot)).size).toBe(1);
    expect((await Promise.all(slotKeys.map((k) => direct.get(k)))).filter((v) => v === one.value)).toHaveLength(1);
    await one.release();
    const intervals = new Map<string, Interval[]>(resources.map((r) => [r, []]));
    await Promise.all(
      resources.flatMap((r) =>
        Array.from({ length: 6 }, async (_, w) => {
          for (let i = 0; i < 4; i++) {
            const lock = await redlocks[w % 2]!.acquire(r, 5_000, { permits });
            await hold(lock, 'permit', intervals.get(r)!, () => tick(5));
          }
        }),
      ),
    );
    for (const r of resources) {
      expect(intervals.get(r)!).toHaveLength(24);
      expect(maxOverlap(intervals.get(r)!)).toBeLessThanOrEqual(permits);
    }
    expect(Math.max(...resources.map((r) => maxOverlap(intervals.get(r)!)))).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('fair locks grant in order of arrival, each hand-off a notice, on two resources in different slots at once', async () => {
    const direct = fx.direct();
    const queued = (resource: string, count: number): Promise<void> =>
      until(async () => (await direct.zcard(key('fair-queue', resource))) === count, `${count} waiter(s) queued`);
    const run = async (resource: string): Promise<{ order: number[]; waiters: Redlock[] }> => {
      const holder = fx.redlock();
      // Each Redlock is a queue participant of its own (process id, notice channel, liveness lease).
      const waiters = Array.from({ length: 3 }, () => fx.redlock({ retry: SLOW_POLL }));
      const held = await holder.acquire(resource, 10_000, { fair: true });
      const order: number[] = [];
      let inside = 0;
      const done: Array<Promise<void>> = [];
      for (const [i, waiter] of waiters.entries()) {
        done.push(
          waiter.using(
            resource,
            10_000,
            async () => {
              expect(++inside).toBe(1);
              order.push(i);
              await new Promise((resolve) => setImmediate(resolve));
              inside--;
            },
            { fair: true },
          ),
        );
        await queued(resource, i + 1);
      }
      // A liveness lease per process in the resource's own set (the holder's too: it started fair).
      expect(await direct.zcard(key('fair-alive', resource))).toBe(4);
      await held.release();
      await Promise.all(done);
      return { order, waiters };
    };
    const results = await Promise.all(resourcesInDifferentSlots(2, 'fair').map(run));
    for (const { order, waiters } of results) {
      expect(order).toEqual([0, 1, 2]);
      // The poll is a minute away: every hand-off was a notice (sent by the releasing client, SPUBLISH).
      expect(waiters.reduce((sum, w) => sum + w.fair.stats.notice, 0)).toBe(3);
      expect(waiters.reduce((sum, w) => sum + w.fair.stats.poll, 0)).toBe(0);
    }
  }, 60_000);

  it('a fair waiter whose process died (no liveness lease) is dropped from the head, and the next one gets the lock', async () => {
    const resource = uniqueResource('fair-dead');
    const direct = fx.direct();
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 10_000);
    // A waiter of a process that died right after it queued: first in line, no lease.
    await direct.set(key('fair-ticket', resource), '1');
    await direct.zadd(key('fair-queue', resource), 1, 'deadprocess:0');
    const waiter = fx.redlock({ fairWaiterTtlMs: 300, retry: { retries: Infinity, delayMs: 20, jitterMs: 0 } });
    const waiting = waiter.acquire(resource, 10_000, { fair: true, timeoutMs: 20_000 });
    await until(async () => (await direct.zcard(key('fair-queue', resource))) === 2, 'queued behind the dead waiter');
    await held.release();
    const lock = await waiting;
    expect(await direct.zscore(key('fair-queue', resource), 'deadprocess:0')).toBeNull();
    await lock.release();
  }, 30_000);

  it('checkNodes probes a cluster node with keys of one slot: no CROSSSLOT, every command the library sends allowed', async () => {
    const report = await fx.redlock().checkNodes({ clockSampleMs: 50 });
    for (const f of report.findings) expect(`${f.message} ${f.fix ?? ''}`).not.toMatch(/CROSSSLOT|non local key|hash slot/i);
    const acl = report.findings.find((f) => f.check === 'acl');
    expect(acl?.level).toBe('ok');
    expect(report.findings.find((f) => f.check === 'reachable')?.level ?? 'ok').toBe('ok');
  });

  it('inspect and forceRelease work on cluster keys: holder, fencing counter and sharded waiters; the waiter wakes', async () => {
    const holder = fx.redlock();
    const waiter = fx.redlock({ retry: SLOW_POLL });
    const admin = fx.redlock();
    const resource = uniqueResource('operator');
    const lock = await holder.acquire(resource, 30_000, { fencing: true });
    const waiting = waiter.acquire(resource, 10_000, { fencing: true });
    await until(async () => (await admin.inspect(resource)).nodes[0]!.waiters === 1, 'the waiter subscribed on its shard');
    const state = await admin.inspect(resource);
    expect(state.holder).toBeDefined();
    expect(state.nodes[0]).toMatchObject({ reachable: true, held: true, fencingCounter: String(lock.fencingToken) });
    const forced = await admin.forceRelease(resource, { reason: 'cluster test' });
    expect(forced.released).toBe(1);
    expect(forced.fencingCounter > lock.fencingToken!).toBe(true);
    // Woken by the forced release's notice (its poll is a minute away), with a token past the counter.
    const next = await waiting;
    expect(next.fencingToken! > forced.fencingCounter).toBe(true);
    expect((await lock.extend(10_000).catch((err: unknown) => err)) instanceof Error).toBe(true);
    await next.release();
  });

  it("with replicaSync and the slot's replica paused, no primitive grant counts nor stays behind; grants count again once it resumes", async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 1_000, replicaSync: { replicas: 1, timeoutMs: 100 } });
    const resource = uniqueResource('unsynced');
    const master = await fx.cluster.masterOfSlot(hashSlot(key('lock', resource)));
    const [replica] = await fx.cluster.replicasOf(master);
    const kinds = [{ mode: 'read' }, { mode: 'write' }, { permits: 2 }, { fair: true }] as const;
    replica!.pause();
    for (const options of kinds) {
      const err = await rejection(redlock.acquire(resource, 10_000, { ...options, retry: false }));
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect(String(err.message)).toMatch(/replica/);
    }
    const direct = fx.direct();
    const semaphoreSlots = [0, 1].map((i) => `${key('semaphore', resource)}:${i}`);
    expect(await direct.exists(key('lock', resource), key('rw-readers', resource), ...semaphoreSlots)).toBe(0);
    replica!.resume();
    await until(() => fx.cluster.isSyncedReplica(replica!), 'the replica is back in sync', 30_000);
    for (const options of kinds) {
      const lock = await redlock.acquire(resource, 10_000, { ...options, timeoutMs: 10_000 });
      await lock.release();
    }
  }, 60_000);

  it('with replicaSync, a master killed mid-run: no reader overlaps a writer, never more than N permits, one fair holder', async () => {
    const synced: RedlockOptions = { ...BUSY, nodeTimeoutMs: 1_000, replicaSync: { replicas: 1, timeoutMs: 200 } };
    const rw = uniqueResource('kill-rw');
    const master = await fx.cluster.masterOfSlot(hashSlot(key('lock', rw)));
    // The semaphore and the fair lock on the same master: the kill hits all three.
    const onMaster = async (name: string): Promise<string> => {
      let r = uniqueResource(name);
      while ((await fx.cluster.masterOfSlot(hashSlot(key('lock', r)))) !== master) r = uniqueResource(name);
      return r;
    };
    const sem = await onMaster('kill-sem');
    const fair = await onMaster('kill-fair');
    const redlocks = [fx.redlock(synced), fx.redlock(synced)];
    const rwIntervals: Interval[] = [];
    const semIntervals: Interval[] = [];
    const fairIntervals: Interval[] = [];
    let done = 0;
    /** Acquires until it works: while the shard fails over, grants fail (unconfirmed or unreachable). */
    type Kind = { mode?: 'read' | 'write'; permits?: number; fair?: boolean };
    const take = async (redlock: Redlock, resource: string, options: Kind): Promise<Lock> => {
      const give = performance.now() + 90_000;
      for (;;) {
        if (performance.now() > give) throw new Error(`no ${JSON.stringify(options)} grant on ${resource} within 90 s of failover`);
        try {
          return await redlock.acquire(resource, 3_000, { ...options, timeoutMs: 2_000 });
        } catch (err) {
          if (!(err instanceof QuorumUnavailableError || err instanceof LockNotAcquiredError)) throw err;
          await tick(20); // a refused connection fails at once: do not spin on it
        }
      }
    };
    const loop = async (redlock: Redlock, resource: string, options: Kind): Promise<void> => {
      const intervals = options.permits ? semIntervals : options.fair ? fairIntervals : rwIntervals;
      for (let i = 0; i < 10; i++) {
        const lock = await take(redlock, resource, options);
        await hold(lock, options.mode ?? 'permit', intervals, () => tick(options.mode === 'write' ? 3 : 10));
        done++;
      }
    };
    const run = Promise.all(
      redlocks.flatMap((r) => [
        loop(r, rw, { mode: 'read' }),
        loop(r, rw, { mode: 'read' }),
        loop(r, rw, { mode: 'write' }),
        loop(r, sem, { permits: 2 }),
        loop(r, sem, { permits: 2 }),
        loop(r, sem, { permits: 2 }),
        loop(r, fair, { fair: true }),
        loop(r, fair, { fair: true }),
      ]),
    );
    await until(() => done >= 10, 'the run is under way');
    await master.kill();
    await fx.cluster.waitHealthy();
    // The promoted master has no replica: nothing is granted until the old one is back as its replica.
    await master.restart();
    await fx.cluster.waitHealthy();
    await until(() => fx.cluster.isSyncedReplica(master), 'the restarted master syncs as a replica', 30_000);
    await run;
    expect(done).toBe(160);
    expect(overlapsBetween(rwIntervals, 'read', 'write')).toBe(0);
    expect(maxOverlap(rwIntervals, ['write'])).toBe(1);
    expect(maxOverlap(semIntervals)).toBeLessThanOrEqual(2);
    expect(fairIntervals).toHaveLength(40);
    expect(maxOverlap(fairIntervals)).toBe(1);
  }, 180_000);
});
