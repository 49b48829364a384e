/**
 * Every library under test behind one small interface, each at its documented defaults
 * (clients created as their READMEs show) except for a retry budget large enough that a
 * waiter under contention never gives up: the benchmark measures hand-offs, not timeouts.
 */
import { Redis } from 'ioredis';
import { Redlock as OurRedlock } from '@redlock-nest/core';
// @ts-expect-error redlock 5 beta's types are unreachable under NodeNext (its exports map has no "types"): typed below.
import NodeRedlock from 'redlock';
import * as sesameModule from '@sesamecare-oss/redlock';
import { RedlockMutex } from 'redis-semaphore';
import { createRedlock, IoredisAdapter, type Lock as UniversalLock, type LockHandle } from 'redlock-universal';
import type { Contender } from './contender.js';
import { RawFloor } from './raw-floor.js';

export type { Contender, Held } from './contender.js';

export type ContenderName =
  | 'redlock-nest'
  | 'redlock-nest (polling)'
  | 'redlock-nest (no restart rule)'
  | 'redlock-nest (fair)'
  | 'redlock 5 beta'
  | '@sesamecare-oss/redlock'
  | 'redis-semaphore'
  | 'redlock-universal'
  | 'raw ioredis floor';

/** Libraries we are compared against. */
export const PEERS: readonly ContenderName[] = ['redlock 5 beta', '@sesamecare-oss/redlock', 'redis-semaphore', 'redlock-universal'];

/** Our waiter with the release notices switched off: what waiting by notice buys, in one run. */
class PollingRedlock extends OurRedlock {
  protected override waitForRetry(_keys: readonly string[], ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason as unknown);
      });
    });
  }
}

function ours(name: ContenderName, urls: readonly string[], polling: boolean, restartRule = true, fair = false): Contender {
  const options = { retry: { retries: Infinity }, fair, ...(restartRule ? {} : { restartRule: false as const }) };
  const redlock = polling ? new PollingRedlock([...urls], options) : new OurRedlock([...urls], options);
  return {
    name,
    acquire: (resource, ttlMs) => redlock.acquire(resource, ttlMs),
    close: () => redlock.close(),
    // A protected member: read for diagnostics only.
    waitStats: () => ({ ...(redlock as unknown as { releaseNotices: { stats: object } }).releaseNotices.stats, fair: redlock.fair.stats }),
  };
}

function plainClients(urls: readonly string[]): Redis[] {
  return urls.map((url) => new Redis(url));
}

async function quitAll(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}

/** node-redlock's API (also its fork's): `extend` returns a new Lock, so the holder swaps it. */
interface NodeRedlockLike {
  acquire(resources: string[], duration: number): Promise<NodeRedlockLock>;
}
interface NodeRedlockLock {
  release(): Promise<unknown>;
  extend(duration: number): Promise<NodeRedlockLock>;
}

function nodeRedlockStyle(name: ContenderName, clients: Redis[], redlock: NodeRedlockLike): Contender {
  return {
    name,
    async acquire(resource, ttlMs) {
      let lock = await redlock.acquire([resource], ttlMs);
      return {
        release: () => lock.release(),
        extend: async (ms) => {
          lock = await lock.extend(ms);
        },
      };
    },
    close: () => quitAll(clients),
  };
}

function semaphore(urls: readonly string[]): Contender {
  const clients = plainClients(urls);
  return {
    name: 'redis-semaphore',
    async acquire(resource, ttlMs) {
      // refreshInterval 0: no background refresh timer, like the other peers' plain acquire.
      const mutex = new RedlockMutex(clients, resource, { lockTimeout: ttlMs, acquireTimeout: 600_000, refreshInterval: 0 });
      await mutex.acquire();
      return {
        release: () => mutex.release(),
        // Its refresh is not public; it is what its own timer calls to extend.
        extend: () => (mutex as unknown as { _refresh(): Promise<boolean> })._refresh(),
      };
    },
    close: () => quitAll(clients),
  };
}

function universal(urls: readonly string[]): Contender {
  const clients = plainClients(urls);
  const adapters = clients.map((c) => new IoredisAdapter(c));
  const locks = new Map<string, UniversalLock>();
  return {
    name: 'redlock-universal',
    async acquire(resource, ttlMs) {
      let lock = locks.get(resource);
      if (!lock) {
        lock = createRedlock({ adapters, key: resource, ttl: ttlMs, retryAttempts: 1_000_000 });
        locks.set(resource, lock);
      }
      const handle: LockHandle = await lock.acquire();
      const owner = lock;
      return { release: () => owner.release(handle), extend: (ms) => owner.extend(handle, ms) };
    },
    close: () => quitAll(clients),
  };
}

type SesameCtor = new (clients: Iterable<Redis>, settings?: Record<string, unknown>) => NodeRedlockLike;

/** Creates one contender on `urls`. */
export async function createContender(name: ContenderName, urls: readonly string[]): Promise<Contender> {
  switch (name) {
    case 'redlock-nest':
      return ours(name, urls, false);
    case 'redlock-nest (polling)':
      return ours(name, urls, true);
    case 'redlock-nest (fair)':
      // Waiters queue on the nodes (FIFO across processes); a release wakes only the next one.
      return ours(name, urls, false, true, true);
    case 'redlock-nest (no restart rule)':
      // What the restart rule costs in the steady state (one INFO per connect, one `.then` per reply).
      return ours(name, urls, false, false);
    case 'redlock 5 beta': {
      const clients = plainClients(urls);
      return nodeRedlockStyle(name, clients, new (NodeRedlock as SesameCtor)(clients, { retryCount: 1_000_000 }));
    }
    case '@sesamecare-oss/redlock': {
      const clients = plainClients(urls);
      // A CommonJS package: its named export may sit on the default export under ESM.
      const mod = sesameModule as unknown as { Redlock?: SesameCtor; default?: { Redlock: SesameCtor } };
      const Ctor = (mod.Redlock ?? mod.default?.Redlock)!;
      return nodeRedlockStyle(name, clients, new Ctor(clients, { retryCount: 1_000_000 }));
    }
    case 'redis-semaphore':
      return semaphore(urls);
    case 'redlock-universal':
      return universal(urls);
    case 'raw ioredis floor':
      return RawFloor.create(urls);
  }
}
