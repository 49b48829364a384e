/**
 * Shared fixtures of the core tests: a cluster of spawned redis-servers, direct
 * clients that read and write keys behind the library's back, and the Redlocks a
 * test file creates (all closed, and every paused server resumed, in `stop()`).
 */
import { Redis } from 'ioredis';
import { failFastOptions, Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { RedisCluster, type RedisServerOptions } from '../harness/redis-server.js';

/** The library's default key prefix. */
export const DEFAULT_PREFIX = 'redlock:';

/** The Redis key of a resource's lock (the format is part of the contract: operators read it). */
export function lockKey(resource: string, prefix = DEFAULT_PREFIX): string {
  return `${prefix}lock:${resource}`;
}

let counter = 0;
/** A resource name no other test in the run uses, so tests sharing servers never interfere. */
export function uniqueResource(name: string): string {
  counter += 1;
  return `${name}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Polls `predicate` until it holds. For states that have no event to await (a key's
 * TTL, a watchdog's extension); the bound only turns a hang into a readable failure.
 */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, boundMs = 10_000): Promise<void> {
  const give = performance.now() + boundMs;
  while (!(await predicate())) {
    if (performance.now() > give) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves with the reason once `signal` aborts (immediately if it already did). */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** Settles `promise` and returns what it rejected with (fails the test if it resolved). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** A client with the fail-fast options the library gives its own clients. */
export function fastClient(url: string, nodeTimeoutMs = 500): Redis {
  return new Redis(url, failFastOptions(nodeTimeoutMs));
}

/** Servers plus direct (non-library) clients to each of them. */
export class Fixture {
  private readonly direct: Redis[];
  private readonly redlocks: Redlock[] = [];
  private readonly clients: Redis[] = [];

  private constructor(readonly cluster: RedisCluster) {
    // Generous timeouts: these clients observe, they are not under test.
    this.direct = cluster.urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 }));
  }

  static async start(count: number, options?: RedisServerOptions): Promise<Fixture> {
    return new Fixture(await RedisCluster.start(count, options));
  }

  get urls(): string[] {
    return this.cluster.urls;
  }

  /** The direct client of node `i`. */
  node(i: number): Redis {
    const client = this.direct[i];
    if (!client) throw new Error(`no node ${i}`);
    return client;
  }

  /** A Redlock over `nodes` (default: every server's URL), closed in `stop()`. */
  redlock(options?: RedlockOptions, nodes: ReadonlyArray<RedisNodeInput> = this.urls): Redlock {
    // Dead and paused nodes are the point of many tests: keep their warnings out of the output.
    const redlock = new Redlock(nodes, { onWarning: () => {}, ...options });
    this.redlocks.push(redlock);
    return redlock;
  }

  /** A fail-fast ioredis client of node `i` that a test passes in (and may ping to flush its socket). */
  client(i: number, nodeTimeoutMs = 500): Redis {
    const client = fastClient(this.urls[i]!, nodeTimeoutMs);
    this.clients.push(client);
    return client;
  }

  /** GET of `resource`'s lock key on each listed node (default: all). */
  values(resource: string, nodes = this.direct.map((_, i) => i), prefix = DEFAULT_PREFIX): Promise<Array<string | null>> {
    return Promise.all(nodes.map((i) => this.node(i).get(lockKey(resource, prefix))));
  }

  /**
   * Waits until every listed node holds `value` for `resource`. acquire() resolves at a
   * quorum, so the last nodes' SETs may still be on their way; tests that then change
   * keys behind the library's back wait for them first.
   */
  async settled(resource: string, value: string, nodes = this.direct.map((_, i) => i)): Promise<void> {
    await until(async () => (await this.values(resource, nodes)).every((v) => v === value), `every node holds ${resource}`);
  }

  /** Makes `resource` look held by someone else on the listed nodes. */
  async holdFor(resource: string, nodes: readonly number[], owner = 'someone-else', ttlMs = 60_000): Promise<void> {
    await Promise.all(nodes.map((i) => this.node(i).set(lockKey(resource), owner, 'PX', ttlMs)));
  }

  /** Deletes `resource`'s lock key on the listed nodes, behind the library's back. */
  async drop(resource: string, nodes: readonly number[], prefix = DEFAULT_PREFIX): Promise<void> {
    await Promise.all(nodes.map((i) => this.node(i).del(lockKey(resource, prefix))));
  }

  /** How many scripts node `i` has run so far (to observe that an attempt reached it). */
  async scriptCalls(i: number): Promise<number> {
    const info = await this.node(i).info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  }

  async stop(): Promise<void> {
    for (const server of this.cluster.servers) server.resume();
    await Promise.allSettled(this.redlocks.map((r) => r.close()));
    for (const client of [...this.direct, ...this.clients]) client.disconnect();
    await this.cluster.stop();
  }
}
