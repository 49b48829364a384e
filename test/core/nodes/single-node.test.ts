import { describe, expect, it } from '@jest/globals';
import { QuorumUnavailableError } from '@redlock-nest/core';
import { useFixture, rejection, uniqueResource } from '../helpers.js';

/** N = 1: the single-instance lock (an efficiency lock, no fault tolerance). */
describe('single node', () => {
  const fx = useFixture(1);

  it('acquires, excludes, extends and releases with a quorum of 1', async () => {
    const redlock = fx.redlock();
    const other = fx.redlock();
    expect(redlock.quorum).toBe(1);
    const resource = uniqueResource('single');

    const lock = await redlock.acquire(resource, 5_000);
    expect(await fx.values(resource)).toEqual([lock.value]);
    expect(await other.tryAcquire(resource, 5_000)).toBeNull();

    await lock.extend(60_000);
    expect(await fx.node(0).pttl(`redlock:lock:${resource}`)).toBeGreaterThan(50_000);

    const result = await lock.release();
    expect(result.released).toBe(1);
    expect(await fx.values(resource)).toEqual([null]);
    expect(await other.tryAcquire(resource, 5_000)).not.toBeNull();
  });

  it('hands the lock to a waiter that retries (a contended attempt asks the arbiter, here the only node)', async () => {
    const holder = fx.redlock();
    const waiter = fx.redlock();
    const resource = uniqueResource('single-wait');
    const lock = await holder.acquire(resource, 5_000);
    const waited = new Promise<void>((resolve) => waiter.once('wait', () => resolve()));
    const waiting = waiter.acquire(resource, 5_000, { retry: { retries: 50, delayMs: 20, jitterMs: 0 } });
    // The waiter failed at least once, so its next attempts are arbitrated.
    await waited;
    await lock.release();
    const won = await waiting;
    expect(await fx.values(resource)).toEqual([won.value]);
    await won.release();
  });

  it('reports QuorumUnavailableError (also from tryAcquire, never null) when the node is down', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300 });
    await redlock.connect();
    await fx.cluster.server(0).kill();
    const err = await rejection(redlock.acquire(uniqueResource('down'), 5_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(1);
    expect(err.nodes.map((n: { status: string }) => n.status)).toEqual(['error']);
    expect(await rejection(redlock.tryAcquire(uniqueResource('down'), 5_000))).toBeInstanceOf(QuorumUnavailableError);
  });
});
