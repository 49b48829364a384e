import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';

describe('smoke', () => {
  let cluster: RedisCluster;
  beforeAll(async () => { cluster = await RedisCluster.start(3); });
  afterAll(async () => { await cluster.stop(); });
  it('acquires and releases', async () => {
    const redlock = new Redlock(cluster.urls);
    const lock = await redlock.acquire('a', 1000, { fencing: true });
    expect(lock.fencingToken).toBe(1n);
    const r = await lock.release();
    expect(r.released).toBe(3);
    await redlock.close();
  });
});
