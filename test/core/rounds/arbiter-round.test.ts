/**
 * Arbitrated acquire rounds: under contention (a retry, or a key that saw waiters lately) an
 * attempt asks the key's arbiter first, the same node in every process, so waiters woken
 * by one release do not split the votes. Observed through the servers' own command counts.
 */
import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, type Lock } from '@redlock-nest/core';
import { rejection, uniqueResource, until, useFixture } from '../helpers.js';

const NODES = 5;
const all = Array.from({ length: NODES }, (_, i) => i);

describe('arbitrated acquire rounds', () => {
  const fx = useFixture(NODES);

  /** SET calls per node: a single-key acquire is a plain SET NX on each node it asks. */
  async function sets(): Promise<number[]> {
    return Promise.all(all.map(async (i) => Number(/^cmdstat_set:calls=(\d+)/m.exec(await fx.node(i).info('commandstats'))?.[1] ?? 0)));
  }

  it('asks only the arbiter on a retry (but every third attempt), the same node whatever order the nodes are given in', async () => {
    const resource = uniqueResource('arbiter');
    await fx.holdFor(resource, all);
    const retry = { retries: 2, delayMs: 1, jitterMs: 0 };
    const a = fx.redlock({ retry });
    const b = fx.redlock({ retry }, [...fx.urls].reverse());
    // Connected first: a node still connecting could miss the first, parallel attempt.
    await Promise.all([a.connect(), b.connect()]);
    const before = await sets();
    const errA = await rejection(a.acquire(resource, 10_000));
    expect(errA).toBeInstanceOf(LockNotAcquiredError);
    expect(errA.attempts).toBe(3);
    // The hint still comes from the holder's key, read on the arbiter.
    expect(errA.retryAfterMs).toBeGreaterThan(0);
    const afterA = (await sets()).map((n, i) => n - before[i]!);
    // Attempts 1 and 3 went to every node (every third attempt asks all, past a stale arbiter); attempt 2 to one node only.
    expect([...afterA].sort()).toEqual([2, 2, 2, 2, 3]);
    const arbiter = afterA.indexOf(3);

    await rejection(b.acquire(resource, 10_000));
    const afterB = (await sets()).map((n, i) => n - before[i]!);
    expect(afterB.indexOf(6)).toBe(arbiter);
    expect([...afterB].sort()).toEqual([4, 4, 4, 4, 6]);
    // Losing at the arbiter left nothing behind: the other owner's keys are untouched.
    expect(await fx.values(resource)).toEqual(all.map(() => 'someone-else'));
    expect(a.activeLocks + b.activeLocks).toBe(0);
  });

  it('falls back to every node when the arbiter does not answer, and acquires', async () => {
    const resource = uniqueResource('arbiter-paused');
    await fx.holdFor(resource, all);
    const probe = fx.redlock({ retry: { retries: 1, delayMs: 1, jitterMs: 0 } });
    await probe.connect();
    const before = await sets();
    await rejection(probe.acquire(resource, 10_000));
    const counts = (await sets()).map((n, i) => n - before[i]!);
    const arbiter = counts.indexOf(2);
    expect(arbiter).toBeGreaterThanOrEqual(0);

    fx.cluster.server(arbiter).pause();
    const waiter = fx.redlock({ nodeTimeoutMs: 100, retry: { retries: Infinity, delayMs: 20, jitterMs: 10 } });
    const waiting = waiter.acquire(resource, 10_000);
    // The holder goes away on the four nodes that answer; the paused arbiter still holds its key.
    await fx.drop(
      resource,
      all.filter((i) => i !== arbiter),
    );
    const lock = await waiting;
    const outcome = lock.acquireNodes[arbiter];
    expect(outcome?.status).not.toBe('ok');
    expect(lock.acquireNodes.filter((o) => o.status === 'ok').length).toBeGreaterThanOrEqual(3);
    fx.cluster.server(arbiter).resume();
    await lock.release();
    await fx.drop(resource, [arbiter]);
  });

  it('keeps mutual exclusion with 4 Redlocks x 4 workers contending (arbitrated retries)', async () => {
    const resource = uniqueResource('arbiter-mutex');
    const redlocks = Array.from({ length: 4 }, () => fx.redlock({ retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } }));
    let inside = 0;
    let maxInside = 0;
    let sections = 0;
    const before = await sets();
    await Promise.all(
      redlocks.flatMap((redlock) =>
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 8; i++) {
            await redlock.using(resource, 10_000, async () => {
              inside++;
              maxInside = Math.max(maxInside, inside);
              await new Promise((resolve) => setImmediate(resolve));
              inside--;
              sections++;
            });
          }
        }),
      ),
    );
    expect(maxInside).toBe(1);
    expect(sections).toBe(4 * 4 * 8);
    // Arbitrated attempts ran: some node got more lock commands than the others.
    const counts = (await sets()).map((n, i) => n - before[i]!);
    expect(Math.max(...counts)).toBeGreaterThan(Math.min(...counts));
  });

  it('issues strictly increasing fencing tokens through arbitrated rounds', async () => {
    const resource = uniqueResource('arbiter-fencing');
    const redlocks = Array.from({ length: 3 }, () => fx.redlock({ retry: { retries: Infinity, delayMs: 5, jitterMs: 10 } }));
    const tokens: bigint[] = [];
    await Promise.all(
      redlocks.flatMap((redlock) =>
        Array.from({ length: 3 }, async () => {
          for (let i = 0; i < 5; i++) {
            const lock: Lock = await redlock.acquire(resource, 10_000, { fencing: true });
            tokens.push(lock.fencingToken!);
            await new Promise((resolve) => setImmediate(resolve));
            await lock.release();
          }
        }),
      ),
    );
    expect(tokens).toHaveLength(45);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'every key released');
  });
});
