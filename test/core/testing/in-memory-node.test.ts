/**
 * The in-memory node: the core's own Redlock over N of them runs the real algorithm (no Redis
 * server in this file). Faults are the node's own: stopped (connections refused), slow (replies
 * delayed) and restarted (empty, new run_id, empty script cache).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  LockLostError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  RedisFencedStore,
  Redlock,
  StaleFencingTokenError,
  type RedlockOptions,
} from '@redlock-nest/core';
import { InMemoryRedisServer } from '@redlock-nest/core/testing';
import { aborted, lockKey, rejection, uniqueResource, until } from '../../harness/test-utils.js';

describe('in-memory nodes under the core Redlock', () => {
  const made: Array<{ redlock: Redlock; servers: InMemoryRedisServer[] }> = [];
  afterEach(async () => {
    for (const { redlock, servers } of made.splice(0)) {
      await redlock.close();
      for (const s of servers) s.close();
    }
  });

  function setup(n = 3, options: RedlockOptions = {}): { redlock: Redlock; servers: InMemoryRedisServer[] } {
    const servers = Array.from({ length: n }, () => new InMemoryRedisServer());
    const redlock = new Redlock(
      servers.map((s) => s.client()),
      { onWarning: () => {}, ...options },
    );
    made.push({ redlock, servers });
    return { redlock, servers };
  }

  it('excludes a second holder and frees the key on release, on every node', async () => {
    const { redlock, servers } = setup();
    const resource = uniqueResource('mutex');
    const lock = await redlock.acquire(resource, 5_000);
    expect(servers.map((s) => s.get(lockKey(resource)))).toEqual([lock.value, lock.value, lock.value]);
    const err = await rejection(redlock.acquire(resource, 5_000, { retry: false }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.retryAfterMs).toBeGreaterThan(0);
    await lock.release();
    expect(servers.map((s) => s.get(lockKey(resource)))).toEqual([undefined, undefined, undefined]);
    await (await redlock.acquire(resource, 5_000)).release();
  });

  it('locks with one node down, and reports a lost quorum as QuorumUnavailableError', async () => {
    const { redlock, servers } = setup();
    servers[0]!.stop();
    const lock = await redlock.acquire(uniqueResource('one-down'), 5_000);
    expect(lock.acquireNodes.map((n) => n.status)).toEqual(['error', 'ok', 'ok']);
    await lock.release();
    servers[1]!.stop();
    const err = await rejection(redlock.acquire(uniqueResource('two-down'), 5_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.nodes[0].error).toMatch(/ECONNREFUSED in-memory-/);
    servers[0]!.start();
    servers[1]!.start();
    await (await redlock.acquire(uniqueResource('back'), 5_000)).release();
  });

  it('counts a node slower than the node timeout as timed out, and locks on the others', async () => {
    const { redlock, servers } = setup(3, { nodeTimeoutMs: 50 });
    servers[2]!.slow(1_000);
    const resource = uniqueResource('slow');
    const lock = await redlock.acquire(resource, 5_000);
    // Granted at the quorum: the slow node's reply is still on its way (or timed out).
    expect(lock.acquireNodes.map((n) => n.status)).toEqual(['ok', 'ok', expect.stringMatching(/^(pending|timeout)$/)]);
    expect(servers[2]!.get(lockKey(resource))).toBe(lock.value); // it ran there; only the reply is late
    await lock.release();
  });

  it('sends the scripts in full again to a restarted node (empty, new run_id, no script cache)', async () => {
    const { redlock, servers } = setup(3, { restartRule: false });
    const resource = uniqueResource('restart');
    // Multi-resource acquires use the script: it is cached on every node now.
    await (await redlock.acquire([resource, `${resource}-b`], 5_000)).release();
    const runId = servers[1]!.runId;
    const lock = await redlock.acquire([resource, `${resource}-b`], 5_000);
    servers[1]!.restart();
    expect(servers[1]!.runId).not.toBe(runId);
    expect(servers[1]!.get(lockKey(resource))).toBeUndefined();
    // The extension reaches the restarted node through EVAL (NOSCRIPT fallback or first use).
    await lock.extend(5_000);
    await lock.release();
    const next = await redlock.acquire([resource, `${resource}-b`], 5_000);
    await until(() => servers[1]!.get(lockKey(resource)) === next.value, 'the restarted node holds the new lock');
    await next.release();
  });

  it('keeps a restarted node out of quorums under the restart rule', async () => {
    const { redlock, servers } = setup();
    await (await redlock.acquire(uniqueResource('warm'), 5_000)).release();
    servers[1]!.restart();
    await until(() => redlock.restarts?.excluded(redlock.nodes[1]!) !== undefined, 'node 1 sits out');
    const lock = await redlock.acquire(uniqueResource('after-restart'), 5_000);
    expect(lock.acquireNodes.map((n) => n.status)).toEqual(['ok', 'error', 'ok']);
    expect(lock.acquireNodes[1]!.error).toMatch(/restart rule/);
    await lock.release();
  });

  it('hands out increasing fencing tokens, also across a restarted node', async () => {
    const { redlock, servers } = setup(3, { restartRule: false });
    const resource = uniqueResource('fence');
    const tokens: bigint[] = [];
    for (let i = 0; i < 3; i++) {
      const lock = await redlock.acquire(resource, 5_000, { fencing: true });
      tokens.push(lock.fencingToken!);
      await lock.release();
    }
    servers[0]!.restart();
    const after = await redlock.acquire(resource, 5_000, { fencing: true });
    tokens.push(after.fencingToken!);
    await after.release();
    expect(tokens).toEqual([1n, 2n, 3n, 4n]);
  });

  it('aborts the lock signal when the watchdog finds the lock gone from a majority', async () => {
    const { redlock, servers } = setup();
    const resource = uniqueResource('lost');
    let signal: AbortSignal | undefined;
    const work = redlock.using(resource, 300, async (lock) => {
      signal = lock.signal;
      servers[0]!.delete(lockKey(resource));
      servers[1]!.delete(lockKey(resource));
      return aborted(lock.signal);
    });
    const reason = await rejection(work);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as LockLostError).reason).toBe('not-owner');
  });

  it('answers the operator tools: inspect, forceRelease (fence raised past every token) and checkIndependence', async () => {
    const { redlock, servers } = setup();
    const resource = uniqueResource('operator');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    const seen = await redlock.inspect(resource);
    expect(seen.holder).toBeDefined();
    expect(seen.nodes.map((n) => n.held)).toEqual([true, true, true]);
    expect(seen.nodes.every((n) => n.fencingCounter === '1')).toBe(true);
    const forced = await redlock.forceRelease(resource, { reason: 'stuck' });
    expect(forced.released).toBe(3);
    expect(forced.fencingCounter).toBeGreaterThan(lock.fencingToken!);
    expect(servers.every((s) => s.get(lockKey(resource)) === undefined)).toBe(true);
    const reports = await redlock.checkIndependence();
    expect(reports.map((r) => r.role)).toEqual(['master', 'master', 'master']);
    expect(new Set(reports.map((r) => r.runId)).size).toBe(3);
  });

  it('backs a RedisFencedStore: the resource refuses a token below the highest it has seen', async () => {
    const server = new InMemoryRedisServer();
    try {
      const store = new RedisFencedStore(server.client());
      await store.write('k', 'a', 5n);
      await store.write('k', 'b', 5n); // the same holder again
      await store.write('k', 'c', 7n);
      await expect(store.write('k', 'stale', 6n)).rejects.toBeInstanceOf(StaleFencingTokenError);
      expect(await store.read('k')).toEqual({ value: 'c', token: 7n });
    } finally {
      server.close();
    }
  });

  it('wakes a waiter by the release notice of an in-memory node', async () => {
    const { redlock } = setup();
    const resource = uniqueResource('notice');
    const lock = await redlock.acquire(resource, 60_000);
    const waits = new Promise<void>((resolve) => redlock.once('wait', () => resolve()));
    const waiting = redlock.acquire(resource, 60_000, { timeoutMs: 30_000 });
    await waits;
    await lock.release();
    const next = await waiting; // a poll would wait for the holder's 60 s TTL
    await next.release();
  });
});
