import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError } from '@redlock-nest/core';
import { useFixture, rejection, uniqueResource, until } from '../helpers.js';

describe('multi-resource locks', () => {
  const fx = useFixture(3);

  it('is all-or-nothing per node: where one key is held by someone else, none is set', async () => {
    const redlock = fx.redlock();
    const a = uniqueResource('a');
    const b = uniqueResource('b');
    await fx.holdFor(b, [0]);

    const lock = await redlock.acquire([a, b], 30_000);
    expect(lock.resources).toEqual([a, b]);
    await fx.settled(a, lock.value, [1, 2]);
    await fx.settled(b, lock.value, [1, 2]);
    // Node 0 refused b, so it did not take a either.
    expect(await fx.values(a, [0])).toEqual([null]);
    expect(await fx.values(b, [0])).toEqual(['someone-else']);

    await lock.release();
    await until(async () => (await fx.values(a)).every((v) => v === null), 'a released everywhere');
    await until(async () => (await fx.values(b, [1, 2])).every((v) => v === null), 'b released where it was ours');
    expect(await fx.values(b, [0])).toEqual(['someone-else']);
  });

  it('fails when a majority holds one of the keys, and leaves none of the others behind', async () => {
    const redlock = fx.redlock();
    const a = uniqueResource('a');
    const b = uniqueResource('b');
    await fx.holdFor(b, [0, 1]);

    const err = await rejection(redlock.acquire([a, b], 30_000, { retry: false }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.resources).toEqual([a, b]);
    await until(async () => (await fx.values(a)).every((v) => v === null), 'a is set nowhere');
  });

  it('conflicts with a lock on any one of its resources', async () => {
    const first = fx.redlock();
    const second = fx.redlock();
    const [x, y, z] = [uniqueResource('x'), uniqueResource('y'), uniqueResource('z')];
    const held = await first.acquire([x, y], 30_000);
    await fx.settled(y, held.value);

    expect(await second.tryAcquire([y, z], 30_000)).toBeNull();
    await until(async () => (await fx.values(z)).every((v) => v === null), 'z was not left locked');
    // Disjoint resources do not conflict.
    expect(await second.tryAcquire([z], 30_000)).not.toBeNull();
  });

  it('extends every key together', async () => {
    const redlock = fx.redlock();
    const [x, y] = [uniqueResource('x'), uniqueResource('y')];
    const lock = await redlock.acquire([x, y], 5_000);
    await lock.extend(60_000);
    await until(async () => {
      const ttls = await Promise.all([x, y].map((r) => fx.node(0).pttl(`redlock:lock:${r}`)));
      return ttls.every((t) => t > 50_000);
    }, 'both keys carry the new TTL');
  });

  it('de-duplicates repeated resources', async () => {
    const redlock = fx.redlock();
    const r = uniqueResource('dup');
    const lock = await redlock.acquire([r, r], 30_000);
    expect(lock.resources).toEqual([r]);
    await lock.release();
  });
});
