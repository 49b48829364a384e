/**
 * Regressions for core bugs found by the bad-input table (fixed in packages/core/src/nodes/lock-node.ts):
 * a release could be dropped or overtaken on a node whose script cache was empty
 * (fresh or restarted server), leaving the lock key set until its TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';

describe('core regressions', () => {
  let cluster: RedisCluster;
  let admins: Redis[];

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    admins = cluster.urls.map((url) => new Redis(url));
  });

  afterAll(async () => {
    for (const a of admins) a.disconnect();
    await cluster.stop();
  });

  it('acquire → release → close on servers with an empty script cache leaves no lock key', async () => {
    const leaks: string[] = [];
    for (let i = 0; i < 60; i++) {
      // An empty script cache, as after a restart: the first EVALSHA would come back NOSCRIPT.
      await Promise.all(admins.map((a) => a.script('FLUSH')));
      const redlock = new Redlock(cluster.urls, { onWarning: () => undefined });
      const lock = await redlock.acquire(`fresh-${i}`, 10_000);
      await lock.release();
      await redlock.close();
      for (const [n, a] of admins.entries()) {
        if ((await a.exists(`redlock:lock:fresh-${i}`)) === 1) leaks.push(`cycle ${i}, node ${n}`);
      }
    }
    expect(leaks).toEqual([]);
  });
});
