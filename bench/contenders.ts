/**
 * Every library under test behind one small interface, clients created as their READMEs
 * show, with a retry budget large enough that a waiter under contention never gives up: the
 * benchmark measures hand-offs, not timeouts. Two profiles: `defaults` (each library's
 * documented retry timing) and `tuned` (every library that allows it retries every
 * 10 ms ± 5 ms, which is what users do when 200 ms hand-offs hurt).
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
  | 'redlock-nest (ioredis passed in)'
  | 'redlock 5 beta'
  | '@sesamecare-oss/redlock'
  | 'redis-semaphore'
  | 'redlock-universal'
  | 'raw ioredis floor'
  | 'raw floor, polling';

/** Retry timing: each library's defaults, or every library tuned to retry every 10 ms ± 5 ms. */
export type Profile = 'defaults' | 'tuned';

/** The tuned profile's retry: 10 ms ± 5 ms. */
export const TUNED = { delayMs: 10, jitterMs: 5 } as const;

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

function ours(
  name: ContenderName,
  urls: readonly string[],
  polling: boolean,
  profile: Profile,
  restartRule = true,
  fair = false,
): Contender {
  // Our delay is `delayMs + random × jitterMs`: 5 + [0, 10) is 10 ms ± 5 ms.
  const timing = profile === 'tuned' ? { delayMs: TUNED.delayMs - TUNED.jitterMs, jitterMs: 2 * TUNED.jitterMs } : {};
  const options = { retry: { retries: Infinity, ...timing }, fair, ...(restartRule ? {} : { restartRule: false as const }) };
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

function semaphore(urls: readonly string[], profile: Profile): Contender {
  const clients = plainClients(urls);
  return {
    name: 'redis-semaphore',
    async acquire(resource, ttlMs) {
      // refreshInterval 0: no background refresh timer, like the other peers' plain acquire.
      // Its retry has no jitter; its default interval is already 10 ms.
      const retry = profile === 'tuned' ? { retryInterval: TUNED.delayMs } : {};
      const mutex = new RedlockMutex(clients, resource, { lockTimeout: ttlMs, acquireTimeout: 600_000, refreshInterval: 0, ...retry });
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

function universal(urls: readonly string[], profile: Profile): Contender {
  const clients = plainClients(urls);
  const adapters = clients.map((c) => new IoredisAdapter(c));
  const locks = new Map<string, UniversalLock>();
  return {
    name: 'redlock-universal',
    async acquire(resource, ttlMs) {
      let lock = locks.get(resource);
      if (!lock) {
        // Its retry has no jitter (an integer delay, 200 ms by default).
        const retry = profile === 'tuned' ? { retryDelay: TUNED.delayMs } : {};
        lock = createRedlock({ adapters, key: resource, ttl: ttlMs, retryAttempts: 1_000_000, ...retry });
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
export async function createContender(name: ContenderName, urls: readonly string[], profile: Profile = 'defaults'): Promise<Contender> {
  // node-redlock's delay is `retryDelay ± retryJitter` (defaults 200 ± 100).
  const nodeRedlockSettings = {
    retryCount: 1_000_000,
    ...(profile === 'tuned' ? { retryDelay: TUNED.delayMs, retryJitter: TUNED.jitterMs } : {}),
  };
  switch (name) {
    case 'redlock-nest':
      return ours(name, urls, false, profile);
    case 'redlock-nest (polling)':
      return ours(name, urls, true, profile);
    case 'redlock-nest (fair)':
      // Waiters queue on the nodes (FIFO across processes); a release wakes only the next one.
      return ours(name, urls, false, profile, true, true);
    case 'redlock-nest (no restart rule)':
      // What the restart rule costs in the steady state (one INFO per connect, one `.then` per reply).
      return ours(name, urls, false, profile, false);
    case 'redlock-nest (ioredis passed in)': {
      // The same ioredis clients the peers get (default options), passed in instead of URLs.
      const clients = plainClients(urls);
      // Its warning (a passed-in client queues commands while offline) is for users, not the bench.
      const redlock = new OurRedlock(clients, { onWarning: () => undefined });
      return {
        name,
        acquire: (resource, ttlMs) => redlock.acquire(resource, ttlMs),
        close: async () => {
          await redlock.close();
          await quitAll(clients);
        },
      };
    }
    case 'redlock 5 beta': {
      const clients = plainClients(urls);
      return nodeRedlockStyle(name, clients, new (NodeRedlock as SesameCtor)(clients, nodeRedlockSettings));
    }
    case '@sesamecare-oss/redlock': {
      const clients = plainClients(urls);
      // A CommonJS package: its named export may sit on the default export under ESM.
      const mod = sesameModule as unknown as { Redlock?: SesameCtor; default?: { Redlock: SesameCtor } };
      const Ctor = (mod.Redlock ?? mod.default?.Redlock)!;
      return nodeRedlockStyle(name, clients, new Ctor(clients, nodeRedlockSettings));
    }
    case 'redis-semaphore':
      return semaphore(urls, profile);
    case 'redlock-universal':
      return universal(urls, profile);
    case 'raw ioredis floor':
      return RawFloor.create(urls);
    case 'raw floor, polling':
      // The least a correct client can do under contention: poll every 10 ms ± 5 ms whatever the profile.
      return RawFloor.create(urls, TUNED);
  }
}
