/**
 * One AbortSignal shared by many waiters (an app-wide shutdown signal, say) gets one
 * listener, not one per wait: no MaxListenersExceededWarning, and nothing left on the
 * signal once the last waiter is gone.
 */
import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { useFixture, rejection, uniqueResource, until } from '../helpers.js';

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

const PARKED = { retries: 1_000, delayMs: 600_000, jitterMs: 0 };

describe('a shared AbortSignal', () => {
  const fx = useFixture(3);
  let warnings: Error[];
  const onWarning = (warning: Error): void => {
    warnings.push(warning);
  };
  let redlocks: ProbedRedlock[];

  beforeEach(() => {
    warnings = [];
    redlocks = [];
    process.on('warning', onWarning);
  });
  afterEach(async () => {
    process.off('warning', onWarning);
    await Promise.all(redlocks.map((r) => r.close()));
  });

  function make(): ProbedRedlock {
    const r = new ProbedRedlock(fx.urls, { onWarning: () => undefined });
    redlocks.push(r);
    return r;
  }

  it('1,000 waiters on one signal: one listener, no warning, all rejected with its reason, no listener left', async () => {
    const holder = fx.redlock();
    const waiter = make();
    const resource = uniqueResource('shared-signal');
    await holder.acquire(resource, 60_000);
    const controller = new AbortController();
    const waits = Array.from({ length: 1_000 }, () =>
      rejection(waiter.acquire(resource, 10_000, { signal: controller.signal, retry: PARKED })),
    );
    await until(() => waiter.notices.waiting === 1_000, 'all 1,000 waiters parked', 60_000);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(1);

    const reason = new Error('shutting down');
    controller.abort(reason);
    const errors = await Promise.all(waits);
    expect(errors.every((e) => e === reason)).toBe(true);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
    // A warning is emitted on a later tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  }, 120_000);

  it('removes its listener when the last of the waiters leaves with the lock', async () => {
    const holder = fx.redlock();
    const waiter = make();
    const resource = uniqueResource('shared-signal-done');
    let held = await holder.acquire(resource, 60_000);
    const controller = new AbortController();
    const waits = Array.from({ length: 50 }, () =>
      waiter.using(resource, 10_000, () => undefined, { signal: controller.signal, retry: PARKED }),
    );
    await until(() => waiter.notices.waiting === 50, 'all 50 waiters parked', 30_000);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(1);
    await held.release();
    await Promise.all(waits);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
    held = await holder.acquire(resource, 60_000);
    await held.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  }, 120_000);
});
