/**
 * Shared fixtures of the cluster tests: a real Redis Cluster (3 masters + 3 replicas) or a
 * Sentinel set, the Redlocks a test file creates (closed in teardown), and direct cluster
 * clients that read keys behind the library's back.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { Cluster } from 'ioredis';
import { hashSlot, hashTag, Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { uniqueResource } from '../harness/test-utils.js';
import { RedisClusterMode, RedisSentinelSet } from '../harness/redis-server.js';

/** A started cluster (beforeAll), every paused server resumed after each test, all stopped at the end. */
export function useClusterFixture(): ClusterFixture {
  const fx = new ClusterFixture();
  beforeAll(() => fx.start(), 60_000);
  afterEach(() => fx.resumeAll());
  afterAll(() => fx.stop(), 60_000);
  return fx;
}

export class ClusterFixture {
  private started: RedisClusterMode | undefined;
  private readonly redlocks: Redlock[] = [];
  private readonly clients: Cluster[] = [];

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

  /** A Redlock over this cluster as its one node (or over `nodes`), closed in teardown. */
  redlock(options?: RedlockOptions, nodes: ReadonlyArray<RedisNodeInput> = [{ cluster: this.cluster.urls }]): Redlock {
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
    await this.started?.stop();
  }
}

/** A started Sentinel set per test (failovers change it), with its Redlocks closed after. */
export async function withSentinelSet<T>(run: (set: RedisSentinelSet, track: (r: Redlock) => Redlock) => Promise<T>): Promise<T> {
  const set = await RedisSentinelSet.start();
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
