import {
  LockLostError,
  NodeIndependenceError,
  QuorumUnavailableError,
  RedisFencedStore,
  RedlockArgumentError,
  RedlockClosedError,
} from '@redlock-nest/core';
import { listLocks } from '@redlock-nest/core/operator';
import { Redis } from 'ioredis';
import type { BadInputRow } from './row.js';

const arg = (fix: RegExp) => ({ error: RedlockArgumentError, fix });

/**
 * Half the shape of a node-redis v4/v5 client (sendCommand, isOpen, isReady on its prototype, but
 * none of its connection methods): refused, not taken for options. Only the refusal is under test.
 */
class NodeRedisLikeClient {
  get isOpen(): boolean {
    return false;
  }
  get isReady(): boolean {
    return false;
  }
  sendCommand(): Promise<unknown> {
    return Promise.reject(new Error('not connected'));
  }
}
const MB = 'x'.repeat(1024 * 1024);

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** Rows of the core API (`@redlock-nest/core`). */
export const coreRows: readonly BadInputRow[] = [
  // Operators' listing
  {
    layer: 'core',
    name: 'listLocks with a zero page limit',
    run: (c) => listLocks(c.redlock(), { maxPages: 0 }),
    rejects: arg(/\{ maxPages: 10 \}/),
  },
  // TTLs
  { layer: 'core', name: 'ttl 0', run: (c) => c.redlock().acquire('r', 0), rejects: arg(/ttlMs.*at least 1/) },
  { layer: 'core', name: 'ttl negative', run: (c) => c.redlock().acquire('r', -5), rejects: arg(/at least 1/) },
  { layer: 'core', name: 'ttl NaN', run: (c) => c.redlock().acquire('r', NaN), rejects: arg(/ttlMs.*must be a number/) },
  { layer: 'core', name: 'ttl Infinity', run: (c) => c.redlock().acquire('r', Infinity), rejects: arg(/must be finite/) },
  { layer: 'core', name: 'ttl huge (2^31 ms)', run: (c) => c.redlock().acquire('r', 2 ** 31), rejects: arg(/at most 2147483647/) },
  { layer: 'core', name: 'ttl fractional', run: (c) => c.redlock().acquire('r', 10.5), rejects: arg(/whole number/) },
  {
    layer: 'core',
    name: 'ttl as a string',
    run: (c) => c.redlock().acquire('r', '1000' as unknown as number),
    rejects: arg(/must be a number/),
  },
  // Resource names
  { layer: 'core', name: 'empty resource name', run: (c) => c.redlock().acquire('', 1000), rejects: arg(/non-empty string/) },
  {
    layer: 'core',
    name: 'huge (1 MB) resource name',
    run: (c) => c.redlock().acquire(MB, 1000),
    rejects: arg(/limit is \d+.*Hash long identifiers/),
  },
  {
    layer: 'core',
    name: 'object as resource',
    run: (c) => c.redlock().acquire({ id: 7 } as unknown as string, 1000),
    rejects: arg(/must be a string.*String\(id\)/),
  },
  {
    layer: 'core',
    name: 'number as resource',
    run: (c) => c.redlock().acquire(42 as unknown as string, 1000),
    rejects: arg(/String\(id\)/),
  },
  { layer: 'core', name: 'empty resource list', run: (c) => c.redlock().acquire([], 1000), rejects: arg(/at least one resource/) },
  {
    layer: 'core',
    name: 'Buffer as resource',
    run: (c) => c.redlock().acquire(Buffer.from([0, 255]) as unknown as string, 1000),
    rejects: arg(/must be a string/),
  },
  {
    layer: 'core',
    name: 'binary resource name (NUL, 0xFF, lone surrogate) works and is released',
    run: async (c) => {
      const name = 'bin\u0000\u00ff\ud800end';
      const lock = await c.redlock().acquire(name, 5000);
      // release() resolves once a majority released; the runner then checks every node is clean.
      expectEqual((await lock.release()).released >= 2, true, 'released on a majority');
    },
  },
  {
    layer: 'core',
    name: 'unicode resource name works, excludes, and is released',
    run: async (c) => {
      const name = 'заказ:🔒:注文';
      const r = c.redlock();
      const lock = await r.acquire(name, 5000);
      expectEqual(await r.tryAcquire(name, 5000), null, 'second holder of the same unicode name');
      expectEqual((await lock.release()).released >= 2, true, 'released on a majority');
    },
  },
  // Nodes
  { layer: 'core', name: 'no nodes', run: (c) => c.redlock([]), rejects: arg(/at least one Redis node/) },
  {
    layer: 'core',
    name: 'a URL string instead of an array',
    run: (c) => c.redlock(c.urls[0] as unknown as string[]),
    rejects: arg(/at least one Redis node.*\[/),
  },
  { layer: 'core', name: 'not a URL', run: (c) => c.redlock(['localhost-6379']), rejects: arg(/redis:\/\/.*host:port/) },
  { layer: 'core', name: 'http:// URL', run: (c) => c.redlock(['http://127.0.0.1:6379']), rejects: arg(/use redis:\/\/ or rediss:\/\//) },
  {
    layer: 'core',
    name: 'a number as a node',
    run: (c) => c.redlock([6379 as unknown as string]),
    rejects: arg(/redis:\/\/ URL, ioredis options, an ioredis client or a node-redis client/),
  },
  {
    layer: 'core',
    name: 'the same node twice',
    run: (c) => c.redlock([c.urls[0]!, c.urls[0]!, c.urls[1]!]),
    rejects: arg(/nodes\[0\] \(127\.0\.0\.1:\d+\) and nodes\[1\] .*same Redis server.*List each independent server once/),
  },
  {
    layer: 'core',
    name: 'the same node as a localhost URL and as 127.0.0.1 options',
    run: (c) =>
      c.redlock([c.urls[1]!, c.urls[0]!.replace('127.0.0.1', 'localhost'), { host: '127.0.0.1', port: c.cluster.server(0).port }]),
    rejects: arg(/nodes\[1\] \(localhost:\d+\) and nodes\[2\] \(127\.0\.0\.1:\d+\) are the same Redis server/),
  },
  {
    layer: 'core',
    name: 'the same node in two databases',
    run: (c) => c.redlock([`${c.urls[0]!}/1`, `${c.urls[0]!}/2`, c.urls[1]!]),
    rejects: arg(/same Redis server/),
  },
  {
    layer: 'core',
    name: 'an incomplete node-redis-like client as a node',
    run: (c) => c.redlock([c.urls[0]!, new NodeRedisLikeClient() as never, c.urls[1]!]),
    rejects: arg(/nodes\[1\] got an object with sendCommand\/isOpen.*localhost:6379.*redis:\/\/ \(or rediss:\/\/\) URL/),
  },
  {
    layer: 'core',
    name: 'an incomplete node-redis-like cluster as a node',
    run: (c) => c.redlock([Object.assign(new NodeRedisLikeClient(), { masters: [] }) as never]),
    rejects: arg(/nodes\[0\] got an object with sendCommand and masters, like a node-redis cluster \(createCluster\), but without/),
  },
  {
    layer: 'core',
    name: "node-redis' { url } options",
    run: (c) => c.redlock([{ url: c.urls[0]! } as never]),
    rejects: arg(
      /nodes\[0\] got an object that is neither an ioredis client nor ioredis options: "url" is not an ioredis option.*pass the URL string itself/,
    ),
  },
  {
    layer: 'core',
    name: 'a misspelt ioredis option',
    run: (c) => c.redlock([{ hots: '127.0.0.1', port: c.cluster.server(0).port } as never]),
    rejects: arg(/"hots" is not an ioredis option/),
  },
  {
    layer: 'core',
    name: 'a pending client (a Promise) as a node',
    run: (c) => c.redlock([Promise.resolve(c.urls[0]) as never]),
    rejects: arg(/nodes\[0\] got a Promise.*Await it first/),
  },
  {
    layer: 'core',
    name: 'a replica as a node',
    run: (c) => c.redlock([c.urls[1]!, c.urls[2]!, c.replica.url], { checkIndependence: true }).acquire('r', 1000),
    rejects: { error: NodeIndependenceError, fix: /replica.*no replicas/ },
  },
  {
    layer: 'core',
    name: 'unreachable hosts',
    run: (c) => c.redlock([c.deadUrl, c.otherDeadUrl, c.urls[0]!]).acquire('r', 1000),
    rejects: { error: QuorumUnavailableError, fix: /majority of the configured nodes are up and reachable/ },
  },
  {
    layer: 'core',
    name: 'wrong password',
    run: (c) => c.redlock([c.wrongPasswordUrl]).acquire('r', 1000),
    rejects: { error: QuorumUnavailableError, fix: /refused the credentials \(WRONGPASS\): check the username and password/ },
  },
  {
    layer: 'core',
    name: 'no password for a protected node',
    run: (c) => c.redlock([c.secured.url]).acquire('r', 1000),
    rejects: { error: QuorumUnavailableError, fix: /refused the credentials \(NOAUTH\): check the username and password/ },
  },
  // Options of the wrong type
  { layer: 'core', name: 'options as a string', run: (c) => c.redlock(c.urls, 'fast' as never), rejects: arg(/options must be an object/) },
  {
    layer: 'core',
    name: 'nodeTimeoutMs as a string',
    run: (c) => c.redlock(c.urls, { nodeTimeoutMs: '100' as never }),
    rejects: arg(/nodeTimeoutMs must be a number/),
  },
  {
    layer: 'core',
    name: 'retry as a number',
    run: (c) => c.redlock(c.urls, { retry: 5 as never }),
    rejects: arg(/retry.*an object or false/),
  },
  {
    layer: 'core',
    name: 'keyPrefix as a number',
    run: (c) => c.redlock(c.urls, { keyPrefix: 7 as never }),
    rejects: arg(/keyPrefix must be a string/),
  },
  {
    layer: 'core',
    name: 'driftFactor 2',
    run: (c) => c.redlock(c.urls, { driftFactor: 2 }),
    rejects: arg(/driftFactor must be at most 0.5/),
  },
  {
    layer: 'core',
    name: 'onWarning not a function',
    run: (c) => c.redlock(c.urls, { onWarning: 'log' as never }),
    rejects: arg(/onWarning must be a function/),
  },
  {
    layer: 'core',
    name: 'tracing as a string',
    run: (c) => c.redlock(c.urls, { tracing: 'off' as never }),
    rejects: arg(/tracing must be a boolean/),
  },
  {
    layer: 'core',
    name: 'signal not an AbortSignal',
    run: (c) => c.redlock().acquire('r', 1000, { signal: {} as never }),
    rejects: arg(/signal must be an AbortSignal/),
  },
  {
    layer: 'core',
    name: 'fencing as a string',
    run: (c) => c.redlock().acquire('r', 1000, { fencing: 'yes' as never }),
    rejects: arg(/fencing must be a boolean/),
  },
  {
    layer: 'core',
    name: 'negative timeoutMs',
    run: (c) => c.redlock().acquire('r', 1000, { timeoutMs: -1 }),
    rejects: arg(/timeoutMs must be at least 0/),
  },
  {
    layer: 'core',
    name: 'retry.retries fractional',
    run: (c) => c.redlock().acquire('r', 1000, { retry: { retries: 1.5 } }),
    rejects: arg(/retries must be a whole number/),
  },
  {
    layer: 'core',
    name: 'maxHoldMs 0',
    run: (c) => c.redlock().using('r', 1000, () => 1, { maxHoldMs: 0 }),
    rejects: arg(/maxHoldMs must be at least 1/),
  },
  {
    layer: 'core',
    name: 'using() without a function',
    run: (c) => c.redlock().using('r', 1000, 'work' as never),
    rejects: arg(/needs a function/),
  },
  // Lifecycle mistakes
  {
    layer: 'core',
    name: 'releasing twice',
    run: async (c) => {
      const lock = await c.redlock().acquire('r', 5000);
      const first = await lock.release();
      const second = await lock.release();
      expectEqual(second === first && first.released >= 2, true, "the second release returns the first one's result");
    },
  },
  {
    layer: 'core',
    name: 'extending a released lock',
    run: async (c) => {
      const lock = await c.redlock().acquire('r', 5000);
      await lock.release();
      await lock.extend(5000);
    },
    rejects: { error: LockLostError, fix: /already released; acquire a new lock/ },
  },
  {
    layer: 'core',
    name: 'extending with ttl 0 (the lock stays held, then is released)',
    run: async (c) => {
      const lock = await c.redlock().acquire('r', 5000);
      try {
        await lock.extend(0);
      } finally {
        await lock.release();
      }
    },
    rejects: arg(/at least 1/),
  },
  {
    layer: 'core',
    name: 'closing twice',
    run: async (c) => {
      const r = c.redlock();
      await r.acquire('r', 5000);
      await Promise.all([r.close(), r.close()]);
      await r.close();
      expectEqual(r.activeLocks, 0, 'locks left after close');
    },
  },
  {
    layer: 'core',
    name: 'using a closed instance',
    run: async (c) => {
      const r = c.redlock();
      await r.close();
      await r.acquire('r', 1000);
    },
    rejects: { error: RedlockClosedError, fix: /Create a new Redlock/ },
  },
  // The fenced store
  {
    layer: 'core',
    name: 'fenced store without a client',
    run: () => new RedisFencedStore('redis://x' as never),
    rejects: arg(/needs an ioredis client/),
  },
  {
    layer: 'core',
    name: 'fenced write with a number token',
    run: async (c) => {
      const client = new Redis(c.urls[0]!);
      try {
        await new RedisFencedStore(client).write('k', 'v', 5 as never);
      } finally {
        client.disconnect();
      }
    },
    rejects: arg(/fencing token must be a non-negative bigint.*fencing: true/),
  },
];
