/**
 * Shared fixtures of the core tests: a cluster of spawned redis-servers, direct
 * clients that read and write keys behind the library's back, and the Redlocks a
 * test file creates (all closed, and every paused server resumed, in `stop()`).
 */
import { afterAll, afterEach, beforeAll, beforeEach } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { failFastOptions } from '@redlock-nest/core/internal';
import { RedisCluster, type RedisServerOptions } from '../harness/redis-server.js';
import { DEFAULT_PREFIX, lockKey, until } from '../harness/test-utils.js';

export { aborted, DEFAULT_PREFIX, lockKey, reachable, rejection, uniqueResource, until } from '../harness/test-utils.js';

/** A client with the fail-fast options the library gives its own clients. */
export function fastClient(url: string, nodeTimeoutMs = 500): Redis {
  return new Redis(url, failFastOptions(nodeTimeoutMs));
}

/** The clients a Redlock's nodes may be: the suites that matter run once with each (`describe.each(CLIENT_KINDS)`). */
export const CLIENT_KINDS = ['ioredis', 'node-redis'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** A node-redis v5 client with the fail-fast settings it has: no offline queue, quick reconnects. */
export function nodeRedisClient(url: string, nodeTimeoutMs = 500): ReturnType<typeof createClient> {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    // The connect timeout bounds a hang, it judges nothing: a killed node refuses at once, a paused
    // one accepts (its kernel does). At 1 s, a starved machine failed live nodes' connects.
    socket: { connectTimeout: Math.max(5_000, nodeTimeoutMs * 2), reconnectStrategy: (retries) => Math.min(50 * (retries + 1), 1_000) },
  });
  // Connection errors are expected while a node is killed or paused; the Redlock's adapter reports them.
  client.on('error', () => undefined);
  return client;
}

/**
 * The `nodes[]` for `urls` with the given client: the URLs themselves for ioredis (the library
 * creates and closes its clients), node-redis clients otherwise (passed in: `close()` them).
 */
export function nodesOf(kind: ClientKind, urls: readonly string[]): { nodes: RedisNodeInput[]; close(): Promise<void> } {
  if (kind === 'ioredis') return { nodes: [...urls], close: () => Promise.resolve() };
  const clients = urls.map((url) => nodeRedisClient(url));
  return {
    nodes: clients,
    close: async () => {
      for (const c of clients) if (c.isOpen) c.destroy();
    },
  };
}

/**
 * The servers of a test file, started before its tests (or before each, with `each`),
 * every paused one resumed after each test, and everything stopped at the end.
 *
 * @example
 * ```ts
 * describe('extend', () => {
 *   const fx = useFixture(3);
 *   it('...', async () => { const redlock = fx.redlock(); ... });
 * });
 * ```
 */
export function useFixture(
  count: number,
  { each = false, client = 'ioredis', ...options }: RedisServerOptions & { each?: boolean; client?: ClientKind } = {},
): Fixture {
  const fx = new Fixture(count, options, client);
  (each ? beforeEach : beforeAll)(() => fx.start());
  afterEach(() => fx.resumeAll());
  (each ? afterEach : afterAll)(() => fx.stop());
  return fx;
}

/** Servers plus direct (non-library) clients to each of them. */
export class Fixture {
  private started: RedisCluster | undefined;
  private direct: Redis[] = [];
  private redlocks: Redlock[] = [];
  private clients: Redis[] = [];
  private passedIn: Array<() => Promise<void>> = [];

  constructor(
    private readonly count: number,
    private readonly options: RedisServerOptions = {},
    /** The client of the Redlocks `redlock()` makes over every server. */
    readonly clientKind: ClientKind = 'ioredis',
  ) {}

  async start(): Promise<void> {
    this.started = await RedisCluster.start(this.count, this.options);
    // Generous timeouts: these clients observe, they are not under test.
    this.direct = this.started.urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 }));
  }

  get cluster(): RedisCluster {
    if (!this.started) throw new Error('the fixture is not started (useFixture starts it in beforeAll)');
    return this.started;
  }

  resumeAll(): void {
    for (const server of this.started?.servers ?? []) server.resume();
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

  /** A Redlock over `nodes` (default: every server, with the fixture's client kind), closed in `stop()`. */
  redlock(options?: RedlockOptions, nodes: ReadonlyArray<RedisNodeInput> = this.defaultNodes()): Redlock {
    // Dead and paused nodes are the point of many tests: keep their warnings out of the output.
    const redlock = new Redlock(nodes, { onWarning: () => {}, ...options });
    this.redlocks.push(redlock);
    return redlock;
  }

  private defaultNodes(): RedisNodeInput[] {
    const made = nodesOf(this.clientKind, this.urls);
    this.passedIn.push(() => made.close());
    return made.nodes;
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

  /**
   * How many lock commands node `i` has run so far (to observe that an attempt reached it):
   * scripts, and the plain SET NX of a single-key acquire. (This fixture's own writes, such
   * as holdFor's SET, count too.)
   */
  async lockCommands(i: number): Promise<number> {
    const info = await this.node(i).info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval|set):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  }

  async stop(): Promise<void> {
    this.resumeAll();
    await Promise.allSettled(this.redlocks.map((r) => r.close()));
    await Promise.allSettled(this.passedIn.map((close) => close()));
    for (const client of [...this.direct, ...this.clients]) client.disconnect();
    await this.started?.stop();
    this.started = undefined;
    this.direct = [];
    this.redlocks = [];
    this.clients = [];
    this.passedIn = [];
  }
}
