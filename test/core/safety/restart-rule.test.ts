/**
 * The restart rule of the Redis distributed-locks page ("Redlock"), enforced by the client:
 * a node that restarted without its data does not count toward a quorum until the largest
 * TTL in use has passed since the restart, and its fencing counters are raised from the
 * other nodes before it counts again. Real redis-server processes, killed and wiped.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  QuorumUnavailableError,
  Redlock,
  RedlockArgumentError,
  RedisFencedStore,
  type Lock,
  type RedlockOptions,
} from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisCluster, RedisServer } from '../../harness/redis-server.js';
import { reachable, uniqueResource, until } from '../../harness/test-utils.js';

const OPTIONS: RedlockOptions = { onWarning: () => undefined, nodeTimeoutMs: 200 };

/** One attempt: the lock, or null when held or when no quorum counted. */
async function attempt(redlock: Redlock, resource: string, ttlMs: number): Promise<Lock | null> {
  try {
    return await redlock.tryAcquire(resource, ttlMs, { fencing: true });
  } catch (err) {
    if (err instanceof QuorumUnavailableError) return null;
    throw err;
  }
}

/** Calls of `command` the node behind `admin` has run so far (this read itself is counted after it). */
async function calls(admin: Redis, command: string): Promise<number> {
  const stats = await admin.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

describe('the restart rule', () => {
  let cluster: RedisCluster | undefined;
  const instances: Redlock[] = [];
  afterEach(async () => {
    await Promise.all(instances.splice(0).map((r) => r.close()));
    await cluster?.stop();
    cluster = undefined;
  });

  function redlock(options: RedlockOptions = {}): Redlock {
    const r = new Redlock(cluster!.urls, { ...OPTIONS, ...options });
    instances.push(r);
    return r;
  }

  /** Kill, wipe and restart nodes `which`; wait until `watchers` reach them again. */
  async function restartEmpty(which: readonly number[], watchers: readonly Redlock[]): Promise<void> {
    for (const i of which) {
      await cluster!.server(i).kill();
      cluster!.server(i).wipe();
      await cluster!.server(i).restart();
    }
    for (const r of watchers) for (const i of which) await reachable(r, i);
  }

  /**
   * The majority-restart scenario: 5 nodes, a fenced lock held by A, 3 nodes restarted
   * empty. Returns B's attempts while A's lock is still valid, and B's lock afterwards.
   */
  async function majorityRestart(options: RedlockOptions): Promise<{ first: Lock; during: Array<Lock | null>; after: Lock | null }> {
    cluster = await RedisCluster.start(5);
    const a = redlock(options);
    const b = redlock(options);
    const resource = uniqueResource('restart');
    const ttlMs = 3_000;
    // B is a running process too: it has used this TTL and seen every node's run_id.
    await (await b.acquire(uniqueResource('warm-up'), ttlMs)).release();
    const admin = cluster.urls.map((url) => new Redis(url));
    // A history of 1000 tokens: far more than the increments B's refused attempts leave on
    // the wiped nodes, so a token taken from their counters alone would go backwards.
    await Promise.all(admin.map((c) => c.set(`redlock:fence:${resource}`, '1000')));
    const first = await a.acquire(resource, ttlMs, { fencing: true });
    try {
      // The catch-up reaches every node: each holds A's token before the restarts.
      await until(
        async () =>
          (await Promise.all(admin.map((c) => c.get(`redlock:fence:${resource}`)))).every((v) => v === String(first.fencingToken)),
        'every node holds the first token',
      );
    } finally {
      admin.forEach((c) => c.disconnect());
    }
    await restartEmpty([0, 1, 2], [b]);
    const during: Array<Lock | null> = [];
    while (first.remainingMs > 0) {
      during.push(await attempt(b, resource, ttlMs));
      await new Promise((resolve) => setTimeout(resolve, 50)); // pacing between attempts
    }
    let after: Lock | null = null;
    if (options.restartRule !== false) {
      // The two nodes that kept their data answer last: the quorum is the three wiped ones.
      cluster.server(3).pause();
      cluster.server(4).pause();
      try {
        await until(
          async () => (after = await attempt(b, resource, ttlMs)) !== null,
          'B gets the lock once the restart rule lets the nodes count',
          15_000,
        );
      } finally {
        cluster.server(3).resume();
        cluster.server(4).resume();
      }
    }
    return { first, during, after };
  }

  it('without the rule (restartRule: false) a second holder gets in while the first lock is valid: the hazard', async () => {
    const { during } = await majorityRestart({ restartRule: false });
    expect(during.some((lock) => lock !== null)).toBe(true);
  }, 30_000);

  it('with the rule: 3 of 5 nodes restart empty under a held fenced lock, no second holder, and tokens never go backwards', async () => {
    const { first, during, after } = await majorityRestart({});
    expect(during.length).toBeGreaterThan(0);
    expect(during.filter((lock) => lock !== null)).toEqual([]);
    expect(after).not.toBeNull();
    expect(after!.fencingToken! > first.fencingToken!).toBe(true);
    // And the tokens keep increasing, whichever 3 nodes answer first.
    const b = instances[1]!;
    let last = after!.fencingToken!;
    await after!.release();
    for (let i = 0; i < 10; i++) {
      const lock = await b.acquire(first.resources[0]!, 3_000, { fencing: true });
      expect(lock.fencingToken! > last).toBe(true);
      last = lock.fencingToken!;
      await lock.release();
    }
  }, 40_000);

  it('a restarted node without durable persistence does not count: one node is a quorum of one, so the acquire fails naming the rule', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock();
    await (await r.acquire(uniqueResource('before'), 10_000)).release();
    await restartEmpty([0], [r]);
    const err = await r.acquire(uniqueResource('after'), 10_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect((err as QuorumUnavailableError).message).toMatch(/restart rule/);
  });

  it('an acquisition whose deadline outlasts the restart window waits it out and gets the lock, without polling through it', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock();
    // The largest TTL in use: the window a restart opens.
    await (await r.acquire(uniqueResource('before'), 1_500)).release();
    await restartEmpty([0], [r]);
    const admin = new Redis(cluster.urls[0]!);
    try {
      const sent = async (): Promise<number> =>
        (await calls(admin, 'set')) + (await calls(admin, 'evalsha')) + (await calls(admin, 'eval'));
      const before = await sent();
      const lock = await r.acquire(uniqueResource('after'), 1_500, { timeoutMs: 20_000 });
      expect(lock.acquireNodes.map((o) => o.status)).toEqual(['ok']);
      // One attempt finds the window, the next comes after it: the default 100 ms retries would send a dozen.
      expect((await sent()) - before).toBeLessThanOrEqual(3);
      await lock.release();
    } finally {
      admin.disconnect();
    }
  });

  it('an acquisition whose deadline ends inside the restart window fails at once, saying when a quorum counts again', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock();
    await (await r.acquire(uniqueResource('before'), 30_000)).release();
    await restartEmpty([0], [r]);
    const err = await r.acquire(uniqueResource('after'), 30_000, { timeoutMs: 2_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    const failure = err as QuorumUnavailableError;
    expect(failure.attempts).toBe(1);
    expect(failure.retryAfterMs).toBeGreaterThan(2_000);
    expect(failure.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(failure.nodes[0]!.countsAgainInMs).toBe(failure.retryAfterMs);
    expect(failure.message).toMatch(/timeoutMs outlasts the window/);
  });

  it('a majority restarted while a third node keeps its counters: a deadline past the window gets the lock after it, with a higher token', async () => {
    cluster = await RedisCluster.start(3);
    const r = redlock();
    const resource = uniqueResource('majority-wait');
    const first = await r.acquire(resource, 1_500, { fencing: true });
    await first.release();
    await restartEmpty([0, 1], [r]);
    const second = await r.acquire(resource, 1_500, { fencing: true, timeoutMs: 20_000 });
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await second.release();
  });

  it('a rolling restart, one node every ttl/2, under fenced acquisitions: none fails whose deadline outlasts its window, tokens only go up', async () => {
    cluster = await RedisCluster.start(3);
    const r = redlock();
    const resource = uniqueResource('rolling');
    const ttlMs = 1_000;
    await (await r.acquire(resource, ttlMs, { fencing: true })).release();
    let stop = false;
    const tokens: bigint[] = [];
    const failures: unknown[] = [];
    const worker = (async () => {
      while (!stop) {
        try {
          const lock = await r.acquire(resource, ttlMs, { fencing: true, timeoutMs: 10_000 });
          tokens.push(lock.fencingToken!);
          await lock.release();
        } catch (err) {
          failures.push(err);
        }
      }
    })();
    for (const i of [0, 1, 2]) {
      await restartEmpty([i], []);
      await new Promise((resolve) => setTimeout(resolve, ttlMs / 2)); // the rollout's pace, not a wait for an event
    }
    await reachable(r, 2);
    const countBefore = tokens.length;
    await until(() => tokens.length > countBefore + 3, 'acquisitions go on after the rollout', 15_000);
    stop = true;
    await worker;
    expect(failures).toEqual([]);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  }, 40_000);

  it('when the only node that kept its counters is down, the restarted nodes count again after the window, and a fenced store refuses the older token', async () => {
    cluster = await RedisCluster.start(3);
    const storeServer = await RedisServer.start(); // the protected resource: not a lock node
    const storeClient = new Redis(storeServer.url);
    try {
      const r = redlock();
      const resource = uniqueResource('lone-counter');
      const admin = cluster.urls.map((url) => new Redis(url));
      await Promise.all(admin.map((c) => c.set(`redlock:fence:${resource}`, '1000')));
      admin.forEach((c) => c.disconnect());
      const first = await r.acquire(resource, 1_500, { fencing: true });
      const store = new RedisFencedStore(storeClient);
      await store.write(resource, 'first', first.fencingToken!);
      await first.release();
      // Nodes 0 and 1 restart empty; node 2, the one that remembers the counters, goes down.
      await cluster.server(2).kill();
      await restartEmpty([0, 1], [r]);
      const second = await r.acquire(resource, 1_500, { fencing: true, timeoutMs: 20_000 });
      expect(second.acquireNodes.filter((o) => o.status === 'ok')).toHaveLength(2);
      // Its counters restarted: the token is below the first, and the resource says so.
      expect(second.fencingToken! < first.fencingToken!).toBe(true);
      await expect(store.write(resource, 'second', second.fencingToken!)).rejects.toMatchObject({ name: 'StaleFencingTokenError' });
      await second.release();
    } finally {
      storeClient.disconnect();
      await storeServer.stop();
    }
  });

  it('a node with AOF and appendfsync always counts at once after a restart', async () => {
    cluster = await RedisCluster.start(1, { persistent: true });
    const r = redlock();
    await (await r.acquire(uniqueResource('before'), 10_000)).release();
    await cluster.server(0).restart();
    await reachable(r, 0);
    const lock = await r.acquire(uniqueResource('after'), 10_000);
    expect(lock.acquireNodes.map((o) => o.status)).toEqual(['ok']);
    await lock.release();
  });

  it('a reconnect to the same server (same run_id, a dropped connection) is not a restart', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock();
    await (await r.acquire(uniqueResource('before'), 10_000)).release();
    const admin = new Redis(cluster.urls[0]!);
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    } finally {
      admin.disconnect();
    }
    await reachable(r, 0);
    const lock = await r.acquire(uniqueResource('after'), 10_000);
    expect(lock.acquireNodes.map((o) => o.status)).toEqual(['ok']);
    await lock.release();
  });

  it('with restartRule.maxTtlMs, a node first seen with an uptime below it sits out (a process started after the restart)', async () => {
    cluster = await RedisCluster.start(1);
    const r = redlock({ restartRule: { maxTtlMs: 60_000 } });
    const err = await r.acquire(uniqueResource('young'), 1_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect((err as QuorumUnavailableError).nodes[0]!.error).toMatch(/restart rule/);
  });

  it('rejects a malformed restartRule option with a typed error naming the shape', () => {
    for (const bad of ['yes', { maxTtlMs: -1 }, { maxTtlMs: 'long' }]) {
      expect(() => new Redlock(['redis://127.0.0.1:1'], { restartRule: bad as never })).toThrow(RedlockArgumentError);
    }
    expect(() => new Redlock(['redis://127.0.0.1:1'], { restartRule: 'yes' as never })).toThrow(
      /restartRule must be false or \{ maxTtlMs\?: number, declaredTtlMs\?: number \}/,
    );
  });

  it('the steady state pays nothing: no INFO per acquisition, only one per connection', async () => {
    cluster = await RedisCluster.start(3);
    const r = redlock();
    // No ready check: this client's own INFO would count.
    const admin = cluster.urls.map((url) => new Redis(url, { enableReadyCheck: false }));
    try {
      await (await r.acquire(uniqueResource('connect'), 5_000)).release();
      // A quorum answered that acquisition, maybe before the last connection was up (and sent its INFO).
      for (const i of [0, 1, 2]) await reachable(r, i);
      const before = await Promise.all(admin.map((c) => calls(c, 'info')));
      for (let i = 0; i < 20; i++) await (await r.acquire(uniqueResource('steady'), 5_000, { fencing: i % 2 === 0 })).release();
      const after = await Promise.all(admin.map((c) => calls(c, 'info')));
      // The only INFO in between is the first read of the statistics itself.
      expect(after.map((n, i) => n - before[i]!)).toEqual([1, 1, 1]);
    } finally {
      admin.forEach((c) => c.disconnect());
    }
  });
});
