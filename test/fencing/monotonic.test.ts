/**
 * Fencing tokens stay strictly increasing across acquisitions by several Redlock
 * instances while minority nodes are killed, restarted and paused (docs/fencing.md).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QuorumUnavailableError, Redlock, type RedisNodeInput } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisCluster } from '../harness/redis-server.js';
import { CLIENT_KINDS, nodesOf } from '../core/helpers.js';

const quiet = { onWarning: () => undefined, nodeTimeoutMs: 200 };

describe.each(CLIENT_KINDS)('fencing tokens across the quorum (%s nodes)', (client) => {
  let cluster: RedisCluster;
  const passedIn: Array<() => Promise<void>> = [];

  /** Every server as a node, with this run's client (node-redis clients are closed after all). */
  function nodes(): RedisNodeInput[] {
    const made = nodesOf(client, cluster.urls);
    passedIn.push(() => made.close());
    return made.nodes;
  }

  beforeAll(async () => {
    // Persistent nodes: a killed node comes back with its counters (appendfsync always),
    // the deployment docs/fencing.md asks for.
    cluster = await RedisCluster.start(5, { persistent: true });
  });
  afterAll(async () => {
    await Promise.all(passedIn.map((close) => close()));
    await cluster.stop();
  });

  async function counters(key: string): Promise<Array<bigint | undefined>> {
    return Promise.all(
      cluster.servers.map(async (s) => {
        if (!s.running || s.paused) return undefined;
        const c = new Redis(s.url, { lazyConnect: true });
        await c.connect();
        const v = await c.get(key);
        c.disconnect();
        return v === null ? undefined : BigInt(v);
      }),
    );
  }

  it('are strictly increasing over hundreds of acquisitions by 3 instances while minority nodes are killed, restarted and paused', async () => {
    const instances = [new Redlock(nodes(), quiet), new Redlock(nodes(), quiet), new Redlock(nodes(), quiet)];
    const tokens: bigint[] = [];
    let faults = 0;
    let unavailable = 0;
    const steps = 300;
    try {
      for (let i = 0; i < steps; i++) {
        // Every 25 acquisitions: a new fault on a rotating minority (one killed and restarted, one paused).
        if (i % 25 === 0) {
          const a = cluster.server((i / 25) % 5);
          const b = cluster.server((i / 25 + 2) % 5);
          for (const s of cluster.servers) s.resume();
          if (i % 50 === 0) {
            await a.kill();
            faults++;
          } else {
            await a.restart();
            faults++;
          }
          b.pause();
          faults++;
        }
        if (i % 25 === 12) {
          for (const s of cluster.servers) if (!s.running) await s.restart();
        }
        const redlock = instances[i % instances.length]!;
        // Right after a restart, a node's client is still reconnecting, so for a moment a
        // majority may be unreachable: that is reported (QuorumUnavailableError), and retried here.
        for (;;) {
          try {
            // A partial hold whose release died with its node's connection stays until its TTL (5 s) and
            // can block the 3 nodes left up: wait past that TTL instead of giving up after 50 retries.
            const lock = await redlock.acquire('invoice:1', 5_000, {
              fencing: true,
              timeoutMs: 15_000,
              retry: { retries: Infinity, delayMs: 5, jitterMs: 5 },
            });
            tokens.push(lock.fencingToken!);
            await lock.release();
            break;
          } catch (err) {
            if (!(err instanceof QuorumUnavailableError) || ++unavailable > 500) throw err;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      }
    } finally {
      for (const s of cluster.servers) s.resume();
      for (const s of cluster.servers) if (!s.running) await s.restart();
      await Promise.all(instances.map((r) => r.close()));
    }
    expect(tokens).toHaveLength(steps);
    expect(faults).toBeGreaterThanOrEqual(24);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  }, 120_000);

  it('writes the token back when the granting quorum disagrees, so the next quorum sees it even after the highest node loses its data', async () => {
    const admin = cluster.servers.map((s) => new Redis(s.url));
    const key = 'redlock:fence:ledger';
    // Node 0 alone knows a high counter (it was in an earlier quorum the others missed).
    await Promise.all(admin.map((c, i) => c.set(key, i === 0 ? '100' : '5')));
    const redlock = new Redlock(nodes(), quiet);
    try {
      const first = await redlock.acquire('ledger', 5_000, { fencing: true });
      await first.release();
      // If node 0 answered, the token is 101 and must now be on a majority; if it did not,
      // 6 (still greater than anything handed out by this quorum) — force node 0 in by pausing nobody:
      const after = await counters(key);
      const atLeast = after.filter((v) => v !== undefined && v >= first.fencingToken!).length;
      expect(atLeast).toBeGreaterThanOrEqual(3);
      // Node 0 restarts empty (its data lost): the next token must still be greater.
      await admin[0]!.flushall();
      const second = await redlock.acquire('ledger', 5_000, { fencing: true });
      await second.release();
      expect(second.fencingToken! > first.fencingToken!).toBe(true);
    } finally {
      admin.forEach((c) => c.disconnect());
      await redlock.close();
    }
  });

  it('hands out tokens above 2^53 without losing precision', async () => {
    const admin = cluster.servers.map((s) => new Redis(s.url));
    const start = 2n ** 53n + 1n;
    await Promise.all(admin.map((c) => c.set('redlock:fence:big', start.toString())));
    const redlock = new Redlock(nodes(), quiet);
    try {
      const a = await redlock.acquire('big', 5_000, { fencing: true });
      await a.release();
      const b = await redlock.acquire('big', 5_000, { fencing: true });
      await b.release();
      expect(a.fencingToken).toBe(start + 1n);
      expect(b.fencingToken).toBe(start + 2n);
    } finally {
      admin.forEach((c) => c.disconnect());
      await redlock.close();
    }
  });

  it('gives each resource of a multi-resource lock its own token, and none without fencing', async () => {
    const redlock = new Redlock(nodes(), quiet);
    try {
      const a = await redlock.acquire(['acct:1', 'acct:2'], 5_000, { fencing: true });
      await a.release();
      const b = await redlock.acquire(['acct:2'], 5_000, { fencing: true });
      await b.release();
      const plain = await redlock.acquire('acct:1', 5_000);
      await plain.release();
      expect([...a.fencingTokens!.keys()]).toEqual(['acct:1', 'acct:2']);
      expect(a.fencingToken).toBe(a.fencingTokens!.get('acct:1'));
      expect(b.fencingToken! > a.fencingTokens!.get('acct:2')!).toBe(true);
      expect(plain.fencingToken).toBeUndefined();
      expect(plain.fencingTokens).toBeUndefined();
    } finally {
      await redlock.close();
    }
  });
});
