import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, type NodeOutcome } from '@redlock-nest/core';
import { useFixture, rejection, uniqueResource, until } from '../helpers.js';

describe('retries, timeouts and abort', () => {
  const fx = useFixture(5);

  const allFree = (resource: string) => async () => (await fx.values(resource)).every((v) => v === null);

  it("rejects with the signal's reason when aborted while waiting, and leaves nothing locked", async () => {
    const holder = fx.redlock();
    const waiter = fx.redlock();
    const resource = uniqueResource('abort-wait');
    const held = await holder.acquire(resource, 30_000);
    await fx.settled(resource, held.value);
    const calls = await fx.lockCommands(0);

    const controller = new AbortController();
    const reason = new Error('caller gave up');
    // A minute between attempts: only the abort can end this wait within the test.
    const waiting = waiter.acquire(resource, 30_000, {
      signal: controller.signal,
      retry: { retries: Infinity, delayMs: 60_000, jitterMs: 0 },
    });
    await until(async () => (await fx.lockCommands(0)) > calls, 'the first attempt ran');
    controller.abort(reason);

    expect(await rejection(waiting)).toBe(reason);
    expect(waiter.activeLocks).toBe(0);
    await held.release();
    await until(allFree(resource), 'no key is left behind');
  });

  it('rejects at once, sending nothing, when the signal is already aborted', async () => {
    const redlock = fx.redlock();
    const calls = await Promise.all([0, 1, 2, 3, 4].map((i) => fx.lockCommands(i)));
    const reason = new Error('already aborted');
    const err = await rejection(redlock.acquire(uniqueResource('pre-aborted'), 30_000, { signal: AbortSignal.abort(reason) }));
    expect(err).toBe(reason);
    expect(await Promise.all([0, 1, 2, 3, 4].map((i) => fx.lockCommands(i)))).toEqual(calls);
  });

  it('hands back a lock won after the signal aborted instead of returning it', async () => {
    const redlock = fx.redlock();
    await redlock.connect();
    const resource = uniqueResource('abort-late');
    const controller = new AbortController();
    const acquiring = redlock.acquire(resource, 30_000, { signal: controller.signal });
    controller.abort(new Error('too late'));
    const err = await rejection(acquiring);
    expect((err as Error).message).toBe('too late');
    expect(redlock.activeLocks).toBe(0);
    await until(allFree(resource), 'the won lock was released');
  });

  it('gives up after timeoutMs with LockNotAcquiredError carrying retryAfterMs', async () => {
    const holder = fx.redlock();
    const waiter = fx.redlock();
    const resource = uniqueResource('timeout');
    await holder.acquire(resource, 60_000);
    // Unlimited retries: only timeoutMs can end this.
    const err = await rejection(
      waiter.acquire(resource, 30_000, { timeoutMs: 300, retry: { retries: Infinity, delayMs: 20, jitterMs: 20 } }),
    );
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.attempts).toBeGreaterThanOrEqual(1);
    expect(err.retryAfterMs).toBeGreaterThan(0);
    expect(err.retryAfterMs).toBeLessThanOrEqual(60_000);
    // The hint names the core's knobs and how long it tried.
    expect(err.message).toMatch(
      /It waited \d+ ms\. To wait longer, pass a larger timeoutMs \(e\.g\. \{ timeoutMs: 5_000 \}\) or retry: \{ retries \} in the acquire options/,
    );
    expect(err.waitedMs).toBeGreaterThan(0);
    expect(err.message).not.toContain('wait option');
    expect(waiter.activeLocks).toBe(0);
  });

  it('retries until timeoutMs when timeoutMs is given without a retry policy', async () => {
    const holder = fx.redlock();
    // The instance's policy allows one retry; a per-call timeoutMs replaces the count.
    const waiter = fx.redlock({ retry: { retries: 1, delayMs: 1, jitterMs: 0 } });
    const resource = uniqueResource('timeout-only');
    await holder.acquire(resource, 60_000);
    const err = await rejection(waiter.acquire(resource, 30_000, { timeoutMs: 300 }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.attempts).toBeGreaterThan(2);
  });

  it('makes exactly one attempt with retry: false (per call or per instance) and exactly retries + 1 otherwise', async () => {
    const holder = fx.redlock();
    const resource = uniqueResource('attempts');
    await holder.acquire(resource, 60_000);

    const once = await rejection(fx.redlock().acquire(resource, 30_000, { retry: false }));
    expect(once).toBeInstanceOf(LockNotAcquiredError);
    expect(once.attempts).toBe(1);

    const instance = await rejection(fx.redlock({ retry: false }).acquire(resource, 30_000));
    expect(instance.attempts).toBe(1);

    const three = await rejection(fx.redlock().acquire(resource, 30_000, { retry: { retries: 2, delayMs: 1, jitterMs: 0 } }));
    expect(three.attempts).toBe(3);
  });

  it('tryAcquire returns null while held and a lock once free', async () => {
    const holder = fx.redlock();
    const other = fx.redlock();
    const resource = uniqueResource('try');
    const held = await holder.acquire(resource, 60_000);
    expect(await other.tryAcquire(resource, 30_000)).toBeNull();
    await held.release();
    await until(allFree(resource), 'released');
    const lock = await other.tryAcquire(resource, 30_000);
    expect(lock).not.toBeNull();
    await fx.settled(resource, lock!.value);
  });

  it('releases the partial holds of a split vote (including a timed-out node) before giving up', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 200 });
    await redlock.connect();
    const resource = uniqueResource('split');
    // Nodes 0,1: someone else. Nodes 2,3: free (we win them). Node 4: paused (maybe ours later).
    await fx.holdFor(resource, [0, 1]);
    const calls4 = await fx.lockCommands(4);
    fx.cluster.server(4).pause();

    const err = await rejection(redlock.acquire(resource, 60_000, { retry: false }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.attempts).toBe(1);
    expect(err.nodes.map((n: NodeOutcome) => n.status)).toEqual(['held', 'held', 'ok', 'ok', 'timeout']);

    // Our token was taken back from the nodes we won (60 s TTL: only a release removes it)...
    await until(async () => (await fx.values(resource, [2, 3])).every((v) => v === null), 'partial holds released');
    expect(await fx.values(resource, [0, 1])).toEqual(['someone-else', 'someone-else']);
    // ...and from the paused node once its late SET lands.
    fx.cluster.server(4).resume();
    await until(async () => (await fx.lockCommands(4)) >= calls4 + 2, 'the paused node ran the SET and the release');
    expect((await fx.values(resource, [4]))[0]).toBeNull();
  });
});
