import { describe, expect, it } from '@jest/globals';
import { LockLostError, type Lock } from '@redlock-nest/core';
import { aborted, useFixture, lockKey, rejection, uniqueResource, until } from '../helpers.js';

/**
 * Counts the watchdog's extensions from outside: between extensions `remainingMs`
 * only decreases, so every increase is one successful extension.
 */
function countExtensions(lock: Lock): { readonly count: number; stop(): void } {
  let last = lock.remainingMs;
  let count = 0;
  const timer = setInterval(() => {
    const now = lock.remainingMs;
    if (now > last) count += 1;
    last = now;
  }, 5);
  return {
    get count() {
      return count;
    },
    stop: () => clearInterval(timer),
  };
}

// TTLs here are ≥ 1 s so a busy, shared CPU cannot starve the watchdog into a loss.
describe('using() and its watchdog', () => {
  const fx = useFixture(3);

  it('keeps the lock past its TTL by extending it, while another client cannot take it', async () => {
    const redlock = fx.redlock();
    const rival = fx.redlock();
    const resource = uniqueResource('auto-extend');
    const ttl = 1_200;

    const result = await redlock.using(resource, ttl, async (lock) => {
      const extensions = countExtensions(lock);
      try {
        // Four extensions, one every ttl/3, means the routine outlived the original TTL.
        await until(() => extensions.count >= 4 || lock.signal.aborted, 'the watchdog extended four times');
      } finally {
        extensions.stop();
      }
      expect(lock.signal.aborted).toBe(false);
      expect(await rival.tryAcquire(resource, ttl)).toBeNull();
      expect(await fx.values(resource)).toEqual([lock.value, lock.value, lock.value]);
      for (let i = 0; i < 3; i++) expect(await fx.node(i).pttl(lockKey(resource))).toBeGreaterThan(0);
      return 'done';
    });

    expect(result).toBe('done');
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'using() released the lock');
  });

  it('aborts the signal and rejects with LockLostError "not-owner" when the keys vanish behind its back', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('lost');
    let routineFinished = false;

    const err = await rejection(
      redlock.using(resource, 1_200, async (lock) => {
        await fx.settled(resource, lock.value);
        await fx.drop(resource, [0, 1]);
        const reason = await aborted(lock.signal);
        expect(reason).toBeInstanceOf(LockLostError);
        expect((reason as LockLostError).reason).toBe('not-owner');
        routineFinished = true;
        return 'finished anyway';
      }),
    );

    // The routine completed, but its exclusivity was not guaranteed throughout.
    expect(routineFinished).toBe(true);
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('not-owner');
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await fx.values(resource, [2]))[0] === null, 'the copy left on node 2 was released');
  });

  it('stops extending at maxHoldMs: the signal aborts with "max-hold-exceeded"', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('max-hold');
    let extended = 0;

    const err = await rejection(
      redlock.using(
        resource,
        1_000,
        async (lock) => {
          const extensions = countExtensions(lock);
          const reason = await aborted(lock.signal);
          extensions.stop();
          extended = extensions.count;
          return reason;
        },
        // Longer than the TTL: reaching it at all proves the watchdog extended first.
        { maxHoldMs: 1_500 },
      ),
    );

    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('max-hold-exceeded');
    expect(extended).toBeGreaterThanOrEqual(1);
    expect(redlock.activeLocks).toBe(0);
  });

  it('takes maxHoldMs from the Redlock options by default', async () => {
    const redlock = fx.redlock({ maxHoldMs: 300 });
    const err = await rejection(redlock.using(uniqueResource('max-hold-default'), 5_000, (lock) => aborted(lock.signal)));
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('max-hold-exceeded');
  });

  it('rides out a briefly unreachable quorum: retries the extension and keeps the lock', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 200 });
    await redlock.connect();
    const resource = uniqueResource('flaky');

    const result = await redlock.using(resource, 3_000, async (lock) => {
      const calls = await fx.lockCommands(2);
      fx.cluster.server(0).pause();
      fx.cluster.server(1).pause();
      // Two extension attempts reached the live node: the first failed and was retried.
      await until(async () => (await fx.lockCommands(2)) >= calls + 2, 'the watchdog retried the extension');
      const extensions = countExtensions(lock);
      fx.cluster.server(0).resume();
      fx.cluster.server(1).resume();
      await until(() => extensions.count >= 1 || lock.signal.aborted, 'an extension succeeded after SIGCONT');
      extensions.stop();
      expect(lock.signal.aborted).toBe(false);
      return 'kept';
    });
    expect(result).toBe('kept');
  });

  it("rejects with the routine's own error and still releases", async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('throws');
    const boom = new Error('boom');
    const err = await rejection(
      redlock.using(resource, 5_000, () => {
        throw boom;
      }),
    );
    expect(err).toBe(boom);
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'the lock was released');
  });

  it('counts validity, watchdog and maxHoldMs from when the lock was obtained, not from the first attempt', async () => {
    const holder = fx.redlock();
    const waiter = fx.redlock({ retry: { retries: Infinity, delayMs: 20, jitterMs: 20 } });
    const resource = uniqueResource('late-start');
    const ttl = 1_000;
    const held = await holder.acquire(resource, 30_000);

    const started = performance.now();
    const using = waiter.using(
      resource,
      ttl,
      async (lock) => {
        const extensions = countExtensions(lock);
        await until(() => extensions.count >= 2 || lock.signal.aborted, 'two extensions after a late start');
        extensions.stop();
        return lock.signal.aborted;
      },
      // Shorter than the wait: counted from the first attempt, it would end the hold at once.
      { maxHoldMs: ttl },
    );
    // The scenario is "waited longer than the TTL" (node-redlock #169): there is no event
    // for elapsed time, so this one wait is on the clock.
    await until(() => performance.now() - started > ttl + 100, 'the waiter waited longer than its TTL');
    await held.release();
    expect(await using).toBe(false);
  });
});
