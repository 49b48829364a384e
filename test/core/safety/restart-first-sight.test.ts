/**
 * The restart rule for a process that starts during a restart: it sees every node for the
 * first time, so it cannot tell a restarted node from a freshly started one, only read its
 * uptime. With a declared TTL (`restartRule.declaredTtlMs`, what the Nest module sets), a
 * young node sits out while another node of the set is known older than that TTL; when every
 * node is young (a fresh deployment), they count. Real redis-server processes, killed and wiped.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { QuorumUnavailableError, Redlock, RedlockArgumentError, type Lock, type RedlockOptions } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { DelayProxy } from '../../harness/delay-proxy.js';
import { RedisCluster } from '../../harness/redis-server.js';
import { rejection, uniqueResource, until } from '../../harness/test-utils.js';

const OPTIONS: RedlockOptions = { onWarning: () => undefined, nodeTimeoutMs: 200 };

/** The node's uptime in whole seconds, as INFO reports it (what the rule reads). */
async function uptimeSeconds(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    return Number(/^uptime_in_seconds:(\d+)/m.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
}

/** One attempt: the lock, or the error that refused it. */
async function attempt(redlock: Redlock, resource: string, ttlMs: number): Promise<Lock | QuorumUnavailableError> {
  try {
    const lock = await redlock.tryAcquire(resource, ttlMs, { fencing: true });
    if (!lock) throw new Error('the key was reported held: no node should have refused for contention');
    return lock;
  } catch (err) {
    if (err instanceof QuorumUnavailableError) return err;
    throw err;
  }
}

describe('the restart rule at first sight (a process started during a restart)', () => {
  let cluster: RedisCluster | undefined;
  const closing: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((c) => c.close()));
    await cluster?.stop();
    cluster = undefined;
  });

  function redlock(urls: readonly string[], options: RedlockOptions = {}): Redlock {
    const r = new Redlock(urls, { ...OPTIONS, ...options });
    closing.push(r);
    return r;
  }

  it('2 of 3 nodes restart empty under a held lock: a cold Redlock with nothing declared takes it (the hazard), one with a declared TTL does not, even with the old node answering last', async () => {
    const ttlMs = 4_000;
    cluster = await RedisCluster.start(3);
    const urls = cluster.urls;
    // Node 2 is the survivor: it must be known old (up for the declared TTL) when first seen.
    await until(async () => (await uptimeSeconds(urls[2]!)) >= ttlMs / 1_000, 'node 2 is up for the TTL', 15_000);
    // The proxies to the old node, ready before A's lock starts its clock.
    const slow = await DelayProxy.start(cluster.server(2).port, 100);
    const slower = await DelayProxy.start(cluster.server(2).port, 150);
    closing.push(slow, slower);
    const a = redlock(urls);
    const resource = uniqueResource('first-sight');
    const first = await a.acquire(resource, ttlMs, { fencing: true });
    await Promise.all(
      [0, 1].map(async (i) => {
        await cluster!.server(i).kill();
        cluster!.server(i).wipe();
        await cluster!.server(i).restart();
      }),
    );

    // Without a declared TTL a new process counts the wiped nodes: a second holder.
    const blind = await attempt(redlock(urls), resource, ttlMs);
    expect(first.remainingMs).toBeGreaterThan(0);
    expect(blind).not.toBeInstanceOf(QuorumUnavailableError);
    await (blind as Lock).release();

    // With one, a young node does not count while the old node is unseen, even past the node
    // timeout (200 ms here, the old node's first INFO takes 3 round trips of 300 ms).
    const hasty = redlock([urls[0]!, urls[1]!, slower.url], { restartRule: { declaredTtlMs: ttlMs } });
    const unseen = await attempt(hasty, resource, ttlMs);
    expect(first.remainingMs).toBeGreaterThan(0);
    expect(unseen).toBeInstanceOf(QuorumUnavailableError);
    // Kept out by the rule, or timed out by the round while its verdict still waited: not counted.
    for (const young of (unseen as QuorumUnavailableError).nodes.slice(0, 2)) expect(young.status).not.toBe('ok');

    // And it holds them out for their window once the old node is seen, though its link is slow:
    // the young nodes answer long before its first INFO does, and their verdict waits for it.
    const b = redlock([urls[0]!, urls[1]!, slow.url], { nodeTimeoutMs: 2_000, restartRule: { declaredTtlMs: ttlMs } });
    const refused = await attempt(b, resource, ttlMs);
    expect(first.remainingMs).toBeGreaterThan(0);
    expect(refused).toBeInstanceOf(QuorumUnavailableError);
    const outcomes = (refused as QuorumUnavailableError).nodes;
    expect(outcomes[0]!.error).toMatch(/restart rule/);
    expect(outcomes[0]!.countsAgainInMs).toBeGreaterThan(0);
    expect(outcomes[0]!.countsAgainInMs).toBeLessThanOrEqual(ttlMs + 1_000);

    // A deadline past the window waits it out, and the token is above A's (counters raised from node 2).
    const second = await b.acquire(resource, ttlMs, { fencing: true, timeoutMs: 20_000 });
    expect(first.remainingMs).toBe(0);
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await second.release();
  }, 40_000);

  it('a fresh deployment (every node young) counts at once with a declared TTL, where maxTtlMs holds it back', async () => {
    cluster = await RedisCluster.start(3);
    const declared = redlock(cluster.urls, { restartRule: { declaredTtlMs: 60_000 } });
    const lock = await declared.acquire(uniqueResource('fresh'), 1_000, { timeoutMs: 0 });
    expect(lock.acquireNodes.filter((o) => o.status === 'ok').length).toBeGreaterThanOrEqual(2);
    await lock.release();
    // The strict rule cannot tell this deployment from a restarted one: it waits one maxTtlMs.
    const strict = redlock(cluster.urls, { restartRule: { maxTtlMs: 60_000 } });
    const err = await rejection(strict.acquire(uniqueResource('fresh'), 1_000, { timeoutMs: 0 }));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
  });

  it('a TTL declared later counts for restarts seen while running: the window is the largest declared TTL', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock(cluster.urls);
    await (await r.acquire(uniqueResource('before'), 1_000)).release();
    r.declareTtl(30_000);
    await cluster.server(0).kill();
    cluster.server(0).wipe();
    await cluster.server(0).restart();
    await until(
      () =>
        r.nodes[0]!.call((client) => client.pttl('probe')).then(
          () => true,
          () => false,
        ),
      'node 0 answers again',
    );
    const err = (await rejection(r.acquire(uniqueResource('after'), 1_000, { timeoutMs: 0 }))) as QuorumUnavailableError;
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.retryAfterMs).toBeGreaterThan(1_000);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it('rejects a malformed declaredTtlMs or declareTtl() with a typed error', () => {
    expect(() => new Redlock(['redis://127.0.0.1:1'], { restartRule: { declaredTtlMs: -1 } })).toThrow(/restartRule\.declaredTtlMs/);
    const r = redlock(['redis://127.0.0.1:1']);
    expect(() => r.declareTtl(0)).toThrow(RedlockArgumentError);
  });
});
