/**
 * Shared fixtures of the cluster tests: a real Redis Cluster (3 masters + 3 replicas) or a
 * Sentinel set, the Redlocks a test file creates (closed in teardown), and direct cluster
 * clients that read keys behind the library's back.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import { uniqueResource } from '../harness/test-utils.js';
import type { ClientKind } from '../core/helpers.js';
import { RedisClusterMode, RedisSentinelSet, type RedisSentinelSetOptions } from '../harness/redis-server.js';

/**
 * A started cluster (beforeAll), every paused server resumed after each test, all stopped at the end.
 * `client` is how the Redlocks of `redlock()` reach it: ioredis (`{ cluster: urls }`, created by the
 * library) or a node-redis `createCluster()` passed in.
 */
export function useClusterFixture(client: ClientKind = 'ioredis'): ClusterFixture {
  const fx = new ClusterFixture(client);
  beforeAll(() => fx.start(), 60_000);
  afterEach(() => fx.resumeAll());
  afterAll(() => fx.stop(), 60_000);
  return fx;
}

export class ClusterFixture {
  private started: RedisClusterMode | undefined;
  private readonly redlocks: Redlock[] = [];
  private readonly clients: Cluster[] = [];
  private readonly passedIn: Array<ReturnType<typeof createCluster>> = [];

  constructor(readonly clientKind: ClientKind = 'ioredis') {}

  async start(): Promise<void> {
    this.started = await RedisClusterMode.start();
  }

  get cluster(): RedisClusterMode {
    if (!this.started) throw new Error('the cluster fixture is not started');
    return this.started;
  }

  resumeAll(): void {
    for (const server of this.started?.servers ?? []) server.resume();
  }

  /**
   * This cluster as one `nodes[]` entry of the fixture's client kind, with `urls` as its startup
   * nodes: `{ cluster: urls }` for ioredis, a node-redis `createCluster()` (fail-fast, destroyed in
   * teardown) otherwise.
   */
  node(urls: readonly string[] = this.cluster.urls): RedisNodeInput {
    if (this.clientKind === 'ioredis') return { cluster: [...urls] };
    const cluster = createCluster({
      rootNodes: urls.map((url) => ({ url })),
      defaults: {
        disableOfflineQueue: true,
        socket: { connectTimeout: 1_000, reconnectStrategy: (retries) => Math.min(50 * (retries + 1), 1_000) },
      },
    });
    // Connection errors are expected while a master is killed or paused; the adapter reports them to the engine.
    cluster.on('error', () => undefined);
    this.passedIn.push(cluster);
    return cluster;
  }

  /** A Redlock over this cluster as its one node (or over `nodes`), closed in teardown. */
  redlock(options?: RedlockOptions, nodes: ReadonlyArray<RedisNodeInput> = [this.node()]): Redlock {
    const redlock = new Redlock(nodes, { onWarning: () => {}, ...options });
    this.redlocks.push(redlock);
    return redlock;
  }

  /** Closes `redlock` in teardown. */
  track<T extends Redlock>(redlock: T): T {
    this.redlocks.push(redlock);
    return redlock;
  }

  /** A direct cluster client (generous timeouts: it observes, it is not under test). */
  direct(): Cluster {
    const client = new Cluster(
      this.cluster.urls.map((url) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })),
      { retryDelayOnFailover: 100, retryDelayOnClusterDown: 100 },
    );
    this.clients.push(client);
    return client;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.redlocks.map((r) => r.close()));
    this.clients.forEach((c) => c.disconnect());
    for (const c of this.passedIn) if (c.isOpen) c.destroy();
    await this.started?.stop();
  }
}

/**
 * A started Sentinel set per test (failovers change it), with its Redlocks closed after. A test
 * that fails over starts two replicas: the one not promoted follows the new master at once, where
 * the demoted master only follows on a Sentinel's next look (up to 10 s).
 */
export async function withSentinelSet<T>(
  run: (set: RedisSentinelSet, track: (r: Redlock) => Redlock) => Promise<T>,
  options: RedisSentinelSetOptions = {},
): Promise<T> {
  const set = await RedisSentinelSet.start(options);
  const redlocks: Redlock[] = [];
  try {
    return await run(set, (r) => {
      redlocks.push(r);
      return r;
    });
  } finally {
    await Promise.allSettled(redlocks.map((r) => r.close()));
    await set.stop();
  }
}

/** Resources whose lock keys fall in different slots (and so, with 3 masters, usually on different masters). */
export function resourcesInDifferentSlots(count: number, name = 'multi'): string[] {
  const out: string[] = [];
  const slots = new Set<number>();
  for (let i = 0; out.length < count; i++) {
    const r = uniqueResource(`${name}${i}`);
    const slot = hashSlot(`redlock:lock:${hashTag(r)}`);
    if (!slots.has(slot)) {
      slots.add(slot);
      out.push(r);
    }
  }
  return out;
}
