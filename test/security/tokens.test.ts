/**
 * Owner tokens come from the CSPRNG (node:crypto randomFillSync into a pool, 128 bits each), one per
 * acquisition, and key prefixes isolate tenants sharing the same Redis nodes.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import * as realCrypto from 'node:crypto';
import type { Redlock as RedlockClass } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';

/** Every buffer the CSPRNG filled while the core ran (a copy, as it was filled). */
const drawn: Buffer[] = [];
jest.unstable_mockModule('node:crypto', () => ({
  ...realCrypto,
  default: realCrypto,
  randomBytes: (size: number) => {
    const bytes = realCrypto.randomBytes(size);
    drawn.push(Buffer.from(bytes));
    return bytes;
  },
  randomFillSync: <T extends NodeJS.ArrayBufferView>(buffer: T): T => {
    realCrypto.randomFillSync(buffer);
    drawn.push(Buffer.from(Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)));
    return buffer;
  },
}));

/** The 16-byte pieces the CSPRNG handed out, each as a token would spell it. */
function csprngPieces(): Set<string> {
  const pieces = new Set<string>();
  for (const b of drawn) for (let i = 0; i + 16 <= b.length; i += 16) pieces.add(b.toString('base64url', i, i + 16));
  return pieces;
}
const { Redlock } = await import('@redlock-nest/core');

describe('owner tokens and tenants', () => {
  let cluster: RedisCluster;
  const open: RedlockClass[] = [];
  const redlock = (prefix?: string): RedlockClass => {
    const r = new Redlock(cluster.urls, { onWarning: () => undefined, ...(prefix ? { keyPrefix: prefix } : {}) });
    open.push(r);
    return r;
  };

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
  });

  afterAll(async () => {
    await Promise.all(open.map((r) => r.close()));
    await cluster.stop();
  });

  it('draws every owner token from the CSPRNG, 16 bytes of it, never reused', async () => {
    const r = redlock();
    const tokens: string[] = [];
    for (let i = 0; i < 200; i++) {
      const lock = await r.acquire(`token-${i % 5}`, 5_000);
      tokens.push(lock.value);
      await lock.release();
    }
    const fromCsprng = csprngPieces();
    for (const t of tokens) {
      expect(fromCsprng.has(t)).toBe(true);
      expect(Buffer.from(t, 'base64url').length).toBeGreaterThanOrEqual(16);
    }
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('gives concurrent acquisitions in one process different tokens (one per acquisition, not per process)', async () => {
    const r = redlock();
    const locks = await Promise.all(Array.from({ length: 20 }, (_, i) => r.acquire(`concurrent-${i}`, 5_000)));
    expect(new Set(locks.map((l) => l.value)).size).toBe(20);
    await Promise.all(locks.map((l) => l.release()));
  });

  it('isolates tenants by key prefix: same resource name, separate locks and fencing counters', async () => {
    const a = redlock('tenant-a:');
    const b = redlock('tenant-b:');
    const lockA = await a.acquire('order:1', 5_000, { fencing: true });
    const lockB = await b.acquire('order:1', 5_000, { fencing: true }); // not blocked by tenant A
    expect(lockA.fencingToken).toBe(1n);
    expect(lockB.fencingToken).toBe(1n); // B's counter is its own
    expect(await a.tryAcquire('order:1', 5_000)).toBeNull(); // but a tenant still excludes itself
    await Promise.all([lockA.release(), lockB.release()]);
    const { Redis } = await import('ioredis');
    const admin = new Redis(cluster.urls[0]!);
    try {
      const keys = await admin.keys('*order:1*');
      expect(keys.sort()).toEqual(['tenant-a:fence:order:1', 'tenant-b:fence:order:1']);
    } finally {
      admin.disconnect();
    }
  });
});
