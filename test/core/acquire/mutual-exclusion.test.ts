import { describe, expect, it } from '@jest/globals';
import type { Redlock } from '@redlock-nest/core';
import { CLIENT_KINDS, useFixture, uniqueResource, until } from '../helpers.js';

describe.each(CLIENT_KINDS)('mutual exclusion (%s nodes)', (client) => {
  const fx = useFixture(5, { client });

  it('lets exactly one of 3 Redlocks x 20 concurrent loops into the critical section at a time', async () => {
    const resource = uniqueResource('mutex');
    const redlocks: Redlock[] = [0, 1, 2].map(() => fx.redlock({ retry: { retries: Infinity, delayMs: 10, jitterMs: 40 } }));
    let inside = 0;
    let maxInside = 0;
    let counter = 0;
    let entered = 0;

    const loop = async (redlock: Redlock): Promise<void> => {
      await redlock.using(resource, 30_000, async () => {
        inside += 1;
        entered += 1;
        maxInside = Math.max(maxInside, inside);
        // A read-modify-write split by real I/O: two holders at once would lose an update.
        const seen = counter;
        await fx.node(0).ping();
        counter = seen + 1;
        inside -= 1;
      });
    };

    await Promise.all(redlocks.flatMap((redlock) => Array.from({ length: 20 }, () => loop(redlock))));

    expect(entered).toBe(60);
    expect(maxInside).toBe(1);
    expect(counter).toBe(60);
    for (const redlock of redlocks) expect(redlock.activeLocks).toBe(0);
    // Every holder and every failed attempt cleaned up after itself.
    // release() resolves at a quorum; wait for the stragglers (30 s TTLs: only releases remove keys).
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'every key was released');
  });
});
