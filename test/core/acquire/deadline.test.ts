/**
 * `timeoutMs` (and so `@WithLock({ wait })` / `@LockRoute({ wait })`) is a deadline: a
 * waiter keeps waiting, by release notice or by a fallback poll clipped to the deadline,
 * and makes a last attempt at the deadline. Keys are set behind the library's back with
 * a TTL shorter than the waiter's timeout, so only an attempt at (or after) the key's
 * expiry, within the deadline, can win: no release notice is ever published for them.
 */
import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, Redlock } from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { useFixture, rejection, uniqueResource, until } from '../helpers.js';

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

describe('timeoutMs is a deadline', () => {
  const fx = useFixture(3);

  /** Holds `resource` as someone else for `ttlMs` (expires silently), then starts the clock. */
  async function heldUntilExpiry(ttlMs: number): Promise<string> {
    const resource = uniqueResource('deadline');
    await fx.holdFor(resource, [0, 1, 2], 'someone-else', ttlMs);
    return resource;
  }

  it.each([
    ['longer than', 5_000],
    ['equal to', 700],
    ['shorter than', 250],
  ])(
    'wins at its last attempt when the retry delay is %s timeoutMs (700 ms) and the key expires before the deadline',
    async (_what, delayMs) => {
      const resource = await heldUntilExpiry(500);
      const redlock = fx.redlock();
      const lock = await redlock.acquire(resource, 10_000, { timeoutMs: 700, retry: { retries: 20, delayMs, jitterMs: 0 } });
      expect(await fx.values(resource)).toEqual([lock.value, lock.value, lock.value]);
      await lock.release();
    },
  );

  it.each([
    ['longer than', 5_000],
    ['equal to', 400],
    ['shorter than', 150],
  ])('gives up no earlier than timeoutMs when the retry delay is %s it, after a last attempt', async (_what, delayMs) => {
    const resource = await heldUntilExpiry(60_000);
    const redlock = fx.redlock();
    const started = performance.now();
    const err = await rejection(redlock.acquire(resource, 10_000, { timeoutMs: 400, retry: { retries: 20, delayMs, jitterMs: 0 } }));
    const waited = performance.now() - started;
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(waited).toBeGreaterThanOrEqual(400);
    // The first attempt, and one at the deadline at least.
    expect(err.attempts).toBeGreaterThanOrEqual(2);
  });

  it('with the default retry, timeoutMs 250 still waits the full 250 ms', async () => {
    const resource = await heldUntilExpiry(60_000);
    const redlock = fx.redlock();
    const started = performance.now();
    const err = await rejection(redlock.acquire(resource, 10_000, { timeoutMs: 250 }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('is woken by the release notice while waiting out a retry delay longer than timeoutMs', async () => {
    const holder = fx.redlock();
    const waiter = new ProbedRedlock(fx.urls, { onWarning: () => undefined });
    try {
      const resource = uniqueResource('deadline-notice');
      const held = await holder.acquire(resource, 60_000);
      const acquiring = waiter.acquire(resource, 10_000, { timeoutMs: 3_000, retry: { retries: 20, delayMs: 5_000, jitterMs: 0 } });
      let settled = false;
      void acquiring.then(
        () => (settled = true),
        () => (settled = true),
      );
      // Parked on the notice (armed) after its failed first attempt, and still waiting.
      await until(() => settled || (waiter.notices.waiting === 1 && waiter.notices.stats.armed >= 1), 'the waiter parked');
      expect(settled).toBe(false);
      await held.release();
      const lock = await acquiring;
      expect(waiter.notices.stats.notice).toBe(1);
      await lock.release();
    } finally {
      await waiter.close();
    }
  });
});
