import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '@redlock-nest/core';
import { aborted, CLIENT_KINDS, useFixture, lockKey, reachable, rejection, uniqueResource, until } from '../helpers.js';

describe.each(CLIENT_KINDS)('release (%s nodes)', (client) => {
  const fx = useFixture(3, { client });

  it("never frees someone else's lock: A expires, B acquires, A's late release leaves B's keys on every node", async () => {
    const a = fx.redlock();
    const b = fx.redlock({ retry: { retries: Infinity, delayMs: 10, jitterMs: 10 } });
    const resource = uniqueResource('stale');

    // A short TTL only for A: its expiry is what this test is about.
    const lockA = await a.acquire(resource, 200);
    const reason = await aborted(lockA.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('expired');

    // A's keys outlive its validity by the drift margin; once Redis expired them all, B can
    // take every node (otherwise B may hold just a quorum, next to A's last expiring key).
    await until(async () => (await fx.values(resource)).every((v) => v === null), "A's keys expired");
    const lockB = await b.acquire(resource, 30_000, { timeoutMs: 10_000 });
    expect(lockB.value).not.toBe(lockA.value);
    await fx.settled(resource, lockB.value);

    const late = await lockA.release();
    expect(late.released).toBe(0);
    expect(late.nodes.every((n) => n.status === 'absent' || n.status === 'pending')).toBe(true);

    // Read the keys directly: B still holds every node, with its full TTL.
    expect(await fx.values(resource)).toEqual([lockB.value, lockB.value, lockB.value]);
    for (let i = 0; i < 3; i++) expect(await fx.node(i).pttl(lockKey(resource))).toBeGreaterThan(20_000);
    expect(lockB.signal.aborted).toBe(false);

    await lockB.release();
    await until(async () => (await fx.values(resource)).every((v) => v === null), "B's release removed its keys");
  });

  it('deletes our keys on every node and frees the resource for the next holder', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('release');
    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value);

    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(redlock.quorum);
    expect(result.released).toBe(result.nodes.filter((n) => n.status === 'ok').length);
    expect(lock.released).toBe(true);
    expect(lock.remainingMs).toBe(0);
    // A normal release is not a loss: the holder's signal stays quiet.
    expect(lock.signal.aborted).toBe(false);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'the keys are gone');
    expect(await fx.redlock().tryAcquire(resource, 30_000)).not.toBeNull();
  });

  it('is idempotent: a second release returns the first result and sends nothing', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('twice');
    // Every connection up first: a node still connecting would miss the acquire that a majority answered.
    for (const i of [0, 1, 2]) await reachable(redlock, i);
    const before = await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)));
    const lock = await redlock.acquire(resource, 30_000);
    const first = await lock.release();
    // acquire() and release() resolve at a majority: the last node may not even have run the SET
    // yet (its key reads as absent). Count once every node ran the same commands (SET, release).
    const ran = async (): Promise<number[]> => (await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)))).map((n, i) => n - before[i]!);
    await until(async () => {
      const d = await ran();
      return d[0]! > 0 && d.every((n) => n === d[0]);
    }, 'every node ran the acquire and the release');
    const calls = await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)));
    const second = await lock.release();
    expect(second).toBe(first);
    expect(await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)))).toEqual(calls);
  });

  it('never throws for an expired lock', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('expired-release');
    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value);
    await fx.drop(resource, [0, 1, 2]);
    const result = await lock.release();
    expect(result.released).toBe(0);
    expect(redlock.activeLocks).toBe(0);
  });

  it('makes a later extend fail with LockLostError reason "released"', async () => {
    const redlock = fx.redlock();
    const lock = await redlock.acquire(uniqueResource('extend-after-release'), 30_000);
    await lock.release();
    const err = await rejection(lock.extend(30_000));
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('released');
    expect(err.message).toContain('acquire a new lock instead');
  });
});
