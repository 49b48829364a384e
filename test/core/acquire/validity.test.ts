import { describe, expect, it } from '@jest/globals';
import { LockLostError, QuorumUnavailableError, RedlockArgumentError, type Lock } from '@redlock-nest/core';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runScript } from '../../harness/child-script.js';
import { aborted, useFixture, rejection, uniqueResource, until } from '../helpers.js';

const DIST = join(process.cwd(), 'packages/core/dist/index.js');

/** The lock's monotonic expiry, bracketed by two clock reads around `remainingMs`. */
function expiryBracket(lock: Lock): { low: number; high: number } {
  const low = performance.now();
  const remaining = lock.remainingMs;
  const high = performance.now();
  return { low: low + remaining, high: high + remaining };
}

describe('validity: ttl minus drift', () => {
  const fx = useFixture(3);

  // A drift far larger than any round trip, so "drift was subtracted" cannot be confused with latency.
  const driftOptions = { driftFactor: 0.01, driftConstantMs: 1_000 };
  const ttl = 10_000;
  const drift = Math.floor(ttl * 0.01) + 1_000;

  it('ends at attempt start + ttl - (ttl x driftFactor + driftConstantMs)', async () => {
    const redlock = fx.redlock(driftOptions);
    const startMono = performance.now();
    const startWall = Date.now();
    const lock = await redlock.acquire(uniqueResource('validity'), ttl);
    const endMono = performance.now();
    const endWall = Date.now();

    const expiry = expiryBracket(lock);
    // The attempt started between startMono and endMono.
    expect(expiry.low).toBeLessThanOrEqual(endMono + ttl - drift);
    expect(expiry.high).toBeGreaterThanOrEqual(startMono + ttl - drift);
    // The wall-clock view agrees (1 ms of rounding between the two clocks).
    expect(lock.expiration).toBeLessThanOrEqual(endWall + ttl - drift + 1);
    expect(lock.expiration).toBeGreaterThanOrEqual(startWall + ttl - drift - 1);
    expect(lock.acquiredAt).toBeGreaterThanOrEqual(startWall);
    expect(lock.acquiredAt).toBeLessThanOrEqual(endWall);
    await lock.release();
  });

  it('applies the same math to extend', async () => {
    const redlock = fx.redlock(driftOptions);
    const lock = await redlock.acquire(uniqueResource('validity-extend'), 5_000);
    const startMono = performance.now();
    await lock.extend(ttl);
    const endMono = performance.now();
    const expiry = expiryBracket(lock);
    expect(expiry.low).toBeLessThanOrEqual(endMono + ttl - drift);
    expect(expiry.high).toBeGreaterThanOrEqual(startMono + ttl - drift);
    await lock.release();
  });

  it('rejects a driftFactor that would eat the validity', () => {
    for (const driftFactor of [0.9, 1, -0.1, Number.NaN]) {
      let err: unknown;
      try {
        fx.redlock({ driftFactor });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RedlockArgumentError);
      expect((err as Error).message).toContain('driftFactor');
    }
  });

  it('refuses a ttl no longer than the drift allowance instead of granting a lock with no validity', async () => {
    const redlock = fx.redlock(); // drift of a 2 ms ttl: floor(0.02) + 2 = 2 ms
    const resource = uniqueResource('tiny-ttl');
    const calls = await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)));
    const err = await rejection(redlock.acquire(resource, 2));
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(err.message).toMatch(/ttlMs.*drift/);
    expect(await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)))).toEqual(calls);
    expect(await redlock.tryAcquire(resource, 10_000)).not.toBeNull();
  });

  it('fails (and releases every node) when a quorum answers only after the validity ran out', async () => {
    // 3000 ms ttl with 2990 ms of drift leaves 10 ms of validity; the nodes answer after ~100 ms.
    const redlock = fx.redlock({ driftFactor: 0.01, driftConstantMs: 2_960 });
    await redlock.connect();
    const resource = uniqueResource('slow-quorum');
    await Promise.all([0, 1, 2].map((i) => fx.node(i).client('PAUSE', 100, 'WRITE')));

    // retry: false: slow answers may be a busy machine, so they are otherwise retried (next test).
    const err = await rejection(redlock.acquire(resource, 3_000, { retry: false }));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(1);
    expect(err.message).toContain('validity');
    expect(redlock.activeLocks).toBe(0);
    // The SETs did land (with a 3 s TTL); the failed attempt took them back.
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'the late grants were released');
  });

  it('retries an attempt whose quorum answered after the validity ran out, and wins once the nodes answer in time', async () => {
    const redlock = fx.redlock({ driftFactor: 0.01, driftConstantMs: 2_960 });
    await redlock.connect();
    const resource = uniqueResource('slow-quorum-retried');
    await Promise.all([0, 1, 2].map((i) => fx.node(i).client('PAUSE', 100, 'WRITE')));
    const lock = await redlock.acquire(resource, 3_000);
    expect(await fx.values(resource)).toContain(lock.value);
    await lock.release();
  });

  it('in a process with nothing else to do, an extension that reached only a minority reports it in time', async () => {
    // A quiet process: no other timer or socket activity to wake its event loop. The round's
    // check must not wait for one (it did, for the clients' own 10 s command timeout: the lock
    // then read as expired, LockLostError, instead of QuorumUnavailableError after 200 ms).
    expect(existsSync(DIST)).toBe(true); // run `npm run build` first
    const paused = [0, 1].map((i) => fx.cluster.server(i).pid!);
    const { done } = runScript(`
      import { Redlock } from ${JSON.stringify(DIST)};
      const redlock = new Redlock(${JSON.stringify(fx.urls)}, { onWarning: () => {}, nodeTimeoutMs: 200 });
      await redlock.connect();
      const lock = await redlock.acquire(${JSON.stringify(uniqueResource('quiet-extend'))}, 30_000);
      for (const pid of ${JSON.stringify(paused)}) process.kill(pid, 'SIGSTOP');
      const outcome = await lock.extend(1_000).then(() => 'extended', (err) => err.name);
      for (const pid of ${JSON.stringify(paused)}) process.kill(pid, 'SIGCONT');
      console.log(outcome);
      await redlock.close();
    `);
    expect((await done).lines).toEqual(['QuorumUnavailableError']);
  }, 60_000);

  it('never claims more validity than the nodes hold after an extension that reached only a minority', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 200 });
    const rival = fx.redlock({ retry: { retries: Infinity, delayMs: 20, jitterMs: 20 } });
    await Promise.all([redlock.connect(), rival.connect()]);
    const resource = uniqueResource('shortening-extend');
    const lock = await redlock.acquire(resource, 30_000);

    // Shorten to 1 s while 2 of 3 nodes are paused: node 2 applies it now, the paused ones
    // when they resume. The keys will be gone in 1 s, whatever the quorum said. (The round
    // times the paused nodes out at 200 ms: well inside that second, even on a loaded machine.)
    fx.cluster.server(0).pause();
    fx.cluster.server(1).pause();
    const err = await rejection(lock.extend(1_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(lock.remainingMs).toBeLessThanOrEqual(1_000);
    fx.cluster.server(0).resume();
    fx.cluster.server(1).resume();

    // By the time someone else can hold the resource, our lock has told us it is gone.
    const taken = await rival.acquire(resource, 30_000, { timeoutMs: 10_000 });
    expect(lock.signal.aborted).toBe(true);
    expect(((await aborted(lock.signal)) as LockLostError).reason).toBe('expired');
    await taken.release();
  });
});
