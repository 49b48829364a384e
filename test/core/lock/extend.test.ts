import { describe, expect, it } from '@jest/globals';
import { LockLostError, QuorumUnavailableError } from '@redlock-nest/core';
import { aborted, CLIENT_KINDS, useFixture, lockKey, rejection, uniqueResource, until } from '../helpers.js';

describe.each(CLIENT_KINDS)('extend (%s nodes)', (client) => {
  const fx = useFixture(3, { client });

  it('moves the expiration of the same Lock object forward, on the nodes too', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('extend');
    const lock = await redlock.acquire(resource, 5_000);
    const before = lock.expiration;

    const returned = await lock.extend(60_000);
    expect(returned).toBe(lock);
    expect(lock.expiration).toBeGreaterThan(before + 50_000);
    expect(lock.remainingMs).toBeGreaterThan(50_000);
    // extend() resolves at a quorum; the last node's PEXPIRE may still be on its way.
    await until(
      async () => (await Promise.all([0, 1, 2].map((i) => fx.node(i).pttl(lockKey(resource))))).every((t) => t > 50_000),
      'every node carries the new TTL',
    );
    expect(await fx.values(resource)).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();
  });

  it('fails with LockLostError "not-owner" and aborts the signal when a majority lost the key', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('lost');
    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value);
    await fx.drop(resource, [0, 1]);

    const err = await rejection(lock.extend(30_000));
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('not-owner');
    expect(err.nodes.filter((n: { status: string }) => n.status === 'absent').length).toBeGreaterThanOrEqual(2);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBe(err);
    expect(lock.remainingMs).toBe(0);
    // The extension never re-creates a key that was gone (it could be someone else's by now).
    expect(await fx.values(resource, [0, 1])).toEqual([null, null]);

    // Still released cleanly (the copy left on node 2 goes too), without throwing.
    await lock.release();
    await until(async () => (await fx.values(resource, [2]))[0] === null, 'the last copy was released');
    expect(redlock.activeLocks).toBe(0);
  });

  it("never touches someone else's key: extending a lock taken over fails and leaves their TTL alone", async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('taken-over');
    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value);
    // Someone else holds it now on every node (as after our expiry), for a minute.
    await fx.holdFor(resource, [0, 1, 2], 'someone-else', 60_000);

    const err = await rejection(lock.extend(1_000));
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('not-owner');
    expect(await fx.values(resource)).toEqual(['someone-else', 'someone-else', 'someone-else']);
    // Our (owner-checked) extension did not shorten their key to our 1 s.
    for (let i = 0; i < 3; i++) expect(await fx.node(i).pttl(lockKey(resource))).toBeGreaterThan(50_000);
    await lock.release();
    expect(await fx.values(resource)).toEqual(['someone-else', 'someone-else', 'someone-else']);
  });

  it('fails with LockLostError "expired" once the validity ran out, sending nothing', async () => {
    const redlock = fx.redlock();
    const lock = await redlock.acquire(uniqueResource('expired'), 150);
    const reason = await aborted(lock.signal);
    expect((reason as LockLostError).reason).toBe('expired');
    // A lost lock no longer counts as held, released or not.
    expect(redlock.activeLocks).toBe(0);
    const calls = await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)));
    const err = await rejection(lock.extend(30_000));
    expect(err).toBe(reason);
    expect(await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)))).toEqual(calls);
  });

  it('reports QuorumUnavailableError (not a loss) when a majority is paused, and the lock stays valid', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 200 });
    await redlock.connect();
    const resource = uniqueResource('extend-paused');
    const lock = await redlock.acquire(resource, 30_000);
    const before = lock.expiration;
    fx.cluster.server(0).pause();
    fx.cluster.server(1).pause();

    const err = await rejection(lock.extend(60_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.nodes[0].status).toBe('timeout');
    expect(err.nodes[1].status).toBe('timeout');
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remainingMs).toBeGreaterThan(0);
    // The expiration did not move: only one node confirmed the extension.
    expect(lock.expiration).toBeLessThanOrEqual(before + 5);

    fx.cluster.server(0).resume();
    fx.cluster.server(1).resume();
    await lock.extend(60_000);
    expect(lock.expiration).toBeGreaterThan(before + 20_000);
    await lock.release();
  });

  it('rejects a bad ttl with RedlockArgumentError before sending anything', async () => {
    const redlock = fx.redlock();
    const lock = await redlock.acquire(uniqueResource('extend-args'), 30_000);
    for (const bad of [0, -5, 1.5, Number.NaN]) {
      const err = await rejection(lock.extend(bad));
      expect(err.name).toBe('RedlockArgumentError');
      expect(err.message).toContain('ttlMs');
    }
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });
});
