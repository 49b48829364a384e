/**
 * Lua scripts take keys as KEYS and values as ARGV, never by string building: watched
 * with MONITOR while resource names carry Lua and Redis injection payloads, the set of
 * script bodies stays fixed, every key argument (of scripts, and of the plain SET NX /
 * PTTL of a single-key acquire) is a prefixed key, and a victim key
 * outside the prefix survives.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, RedisFencedStore } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';

const HOSTILE = [
  `x') redis.call('FLUSHALL') --`,
  `"]] .. redis.call('DEL','victim') .. [["`,
  `\nFLUSHALL\r\n`,
  `*3\r\n$3\r\nDEL\r\n$6\r\nvictim\r\n`,
  `{KEYS[1]}`,
  `ARGV[1]`,
];

interface Seen {
  readonly command: string;
  readonly body: string;
  readonly keys: string[];
}

describe('Lua scripts use KEYS and ARGV only', () => {
  let cluster: RedisCluster;
  let monitors: Redis[];
  let admin: Redis;
  const seen: Seen[] = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    admin = new Redis(cluster.urls[0]!);
    await admin.set('victim', 'alive');
    monitors = [];
    for (const url of cluster.urls) {
      const c = new Redis(url);
      const m = await c.monitor();
      c.disconnect();
      m.on('monitor', (_t: string, args: string[]) => {
        const command = String(args[0]).toLowerCase();
        // A single-key acquire is a plain SET NX (then PTTL when held): its key is checked too.
        if (command === 'set' || command === 'pttl') {
          seen.push({ command, body: '', keys: [String(args[1])] });
          return;
        }
        if (command !== 'eval' && command !== 'evalsha') return;
        const numKeys = Number(args[2]);
        seen.push({ command, body: String(args[1]), keys: args.slice(3, 3 + numKeys).map(String) });
      });
      monitors.push(m);
    }
  });

  afterAll(async () => {
    for (const m of monitors) m.disconnect();
    admin.disconnect();
    await cluster.stop();
  });

  it('runs a fixed set of scripts whatever the resource names, with prefixed keys only', async () => {
    const redlock = new Redlock(cluster.urls, { onWarning: () => undefined });
    const waiter = new Redlock(cluster.urls, { onWarning: () => undefined });
    const store = new RedisFencedStore(admin);
    try {
      for (const name of HOSTILE) {
        const lock = await redlock.acquire([name, `${name}-2`], 5_000, { fencing: true });
        expect(await waiter.tryAcquire(name, 5_000)).toBeNull();
        await lock.extend(5_000);
        await store.write(name, 'v', lock.fencingToken!);
        await lock.release();
      }
    } finally {
      await Promise.all([redlock.close(), waiter.close()]);
    }
    await new Promise((resolve) => setImmediate(resolve));

    const bodies = new Set(seen.filter((s) => s.command === 'eval').map((s) => s.body));
    const shas = new Set(seen.filter((s) => s.command === 'evalsha').map((s) => s.body));
    // Six hostile names, yet only the library's own scripts: acquire, release, extend,
    // the fence write-back and the fenced store's access script, at most.
    expect(bodies.size).toBeLessThanOrEqual(5);
    expect(shas.size).toBeLessThanOrEqual(5);
    for (const body of bodies) for (const name of HOSTILE.slice(0, 4)) expect(body).not.toContain(name);
    for (const s of seen) for (const key of s.keys) expect(key).toMatch(/^(redlock:(lock|fence):|fenced:)/);
    expect(seen.some((s) => s.keys.includes(`redlock:lock:${HOSTILE[0]}`))).toBe(true);
    // The rival's single-key attempts went through SET NX and PTTL, with the same prefixed keys.
    expect(seen.some((s) => s.command === 'set' && s.keys[0] === `redlock:lock:${HOSTILE[0]}`)).toBe(true);
    expect(seen.some((s) => s.command === 'pttl' && s.keys[0] === `redlock:lock:${HOSTILE[0]}`)).toBe(true);
    expect(await admin.get('victim')).toBe('alive');
    expect(await admin.dbsize()).toBeGreaterThan(1);
  });
});
