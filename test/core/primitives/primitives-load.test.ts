/**
 * The new primitives under load and odd deadlines, on 3 real redis-server processes: a crowd
 * of readers called in one tick, and a fair waiter whose deadline is shorter than its retry delay.
 */
import { describe, expect, it, jest } from '@jest/globals';
import { LockNotAcquiredError } from '@redlock-nest/core';
import { rejection, uniqueResource, useFixture } from '../helpers.js';

// 2,000 acquisitions in one tick take seconds on an idle machine and many more beside a busy core:
// the bound is for a hang, not a speed target.
jest.setTimeout(120_000);

describe('primitives under load', () => {
  const fx = useFixture(3);

  it('lets 2,000 readers called in one tick share the resource, then hands it to a writer', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('rw-crowd');
    const readers = await Promise.all(
      Array.from({ length: 2_000 }, () => redlock.acquire(resource, 10_000, { mode: 'read', timeoutMs: 20_000 })),
    );
    expect(await fx.redlock().tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
    await Promise.all(readers.map((lock) => lock.release()));
    const writer = await fx.redlock().acquire(resource, 10_000, { mode: 'write', timeoutMs: 5_000 });
    await writer.release();
  });

  it('ends a fair wait at its deadline when the deadline is shorter than the retry delay, and leaves the queue', async () => {
    const holder = fx.redlock();
    const resource = uniqueResource('fair-deadline');
    const held = await holder.acquire(resource, 10_000);
    const impatient = fx.redlock();
    const err = await rejection(
      impatient.acquire(resource, 5_000, { fair: true, timeoutMs: 50, retry: { retries: 100, delayMs: 60_000, jitterMs: 0 } }),
    );
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    // The next fair waiter is not stuck behind the one that gave up: it gets the lock on release.
    const next = fx.redlock().acquire(resource, 5_000, { fair: true, timeoutMs: 10_000 });
    await held.release();
    const lock = await next;
    await lock.release();
  });
});
