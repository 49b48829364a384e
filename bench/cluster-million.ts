/**
 * Many distinct locks held at once: `count` locks acquired in batches of `batch` concurrent
 * acquisitions, all held (checked by counting the keys on the servers), then released in
 * batches. Measures the acquire and release rates, the servers' memory (`INFO memory`,
 * `used_memory`, summed over the masters) and the client's heap (after a GC), and so what one
 * held lock costs on each side.
 */
import { Redis } from 'ioredis';
import { Redlock, type Lock, type RedisNodeInput } from '@redlock-nest/core';

export interface ManyLocksResult {
  readonly acquirePerS: number;
  readonly releasePerS: number;
  /** Server bytes per held lock (used_memory while held minus before, over count). */
  readonly serverBytesPerLock: number;
  /** Client heap bytes per held Lock object. */
  readonly clientBytesPerLock: number;
  readonly serverMiB: number;
  readonly clientMiB: number;
  readonly heldKeys: number;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function sum(servers: readonly Redis[], read: (s: Redis) => Promise<number>): Promise<number> {
  return (await Promise.all(servers.map(read))).reduce((a, b) => a + b, 0);
}

const usedMemory = async (s: Redis): Promise<number> => Number(/used_memory:(\d+)/.exec(await s.info('memory'))?.[1] ?? NaN);

/** `masters`: the URLs of the servers that hold the keys (every master of a cluster). */
export async function manyLocks(
  nodes: RedisNodeInput[],
  masters: readonly string[],
  count: number,
  batch: number,
  log: (m: string) => void,
): Promise<ManyLocksResult> {
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') throw new Error('run with node --expose-gc (npm run bench:cluster does)');
  const servers = masters.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
  const redlock = new Redlock(nodes, { onWarning: () => {} });
  const ttl = 15 * 60_000; // outlives the whole run: nothing expires while held
  try {
    await (await redlock.acquire('many:warm', ttl)).release();
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const mem0 = await sum(servers, usedMemory);
    const locks: Lock[] = [];
    const t0 = performance.now();
    for (let i = 0; i < count; i += batch) {
      const n = Math.min(batch, count - i);
      locks.push(...(await Promise.all(Array.from({ length: n }, (_, j) => redlock.acquire(`many:${i + j}`, ttl)))));
      if ((i / batch) % 20 === 0) log(`${locks.length.toLocaleString('en-US')} locks held`);
    }
    const acquireMs = performance.now() - t0;
    gc();
    const heap1 = process.memoryUsage().heapUsed;
    const mem1 = await sum(servers, usedMemory);
    const heldKeys = await sum(servers, (s) => s.dbsize());
    const t1 = performance.now();
    for (let i = 0; i < locks.length; i += batch) {
      await Promise.all(locks.slice(i, i + batch).map((lock) => lock.release()));
    }
    const releaseMs = performance.now() - t1;
    const left = await sum(servers, (s) => s.dbsize());
    if (left !== 0) throw new Error(`${left} keys left after releasing every lock`);
    return {
      acquirePerS: (count * 1000) / acquireMs,
      releasePerS: (count * 1000) / releaseMs,
      serverBytesPerLock: (mem1 - mem0) / count,
      clientBytesPerLock: (heap1 - heap0) / count,
      serverMiB: (mem1 - mem0) / 2 ** 20,
      clientMiB: (heap1 - heap0) / 2 ** 20,
      heldKeys,
    };
  } finally {
    await redlock.close();
    await Promise.all(servers.map((s) => s.quit()));
  }
}
