/**
 * node-redis v5 clients as lock nodes: what is specific to the adapter (the suites of mutual
 * exclusion, release, extend, release notices, faults and fencing run with both clients).
 */
import { describe, expect, it } from '@jest/globals';
import { createClient } from 'redis';
import { Redlock } from '@redlock-nest/core';
import { lockKey, nodeRedisClient, uniqueResource, until, useFixture } from '../helpers.js';

describe('node-redis clients as nodes', () => {
  const fx = useFixture(3);

  type Client = ReturnType<typeof nodeRedisClient>;

  /** Runs `body` with a Redlock over node-redis clients of every server; closes the Redlock, then the clients. */
  async function withClients(body: (redlock: Redlock, list: Client[]) => Promise<void>, connect = false): Promise<void> {
    const list = fx.urls.map((url) => nodeRedisClient(url));
    if (connect) await Promise.all(list.map((c) => c.connect()));
    const redlock = new Redlock(list, { onWarning: () => undefined });
    try {
      await body(redlock, list);
    } finally {
      await redlock.close();
      for (const c of list) if (c.isOpen) c.destroy();
    }
  }

  it('connects clients never connected, labels nodes host:port, and leaves them open on close', async () => {
    await withClients(async (redlock, list) => {
      expect(list.some((c) => c.isOpen)).toBe(false);
      const lock = await redlock.acquire(uniqueResource('connect'), 5_000);
      expect(lock.acquireNodes.map((n) => n.node)).toEqual(fx.urls.map((u) => u.replace('redis://', '')));
      await lock.release();
      await redlock.close();
      expect(list.every((c) => c.isReady)).toBe(true); // passed in: the caller closes them
    });
  });

  it('uses clients the caller already connected', async () => {
    await withClients(async (redlock) => {
      await (await redlock.acquire(uniqueResource('connected'), 5_000)).release();
    }, true);
  });

  it('answers the independence check and the operator tools through the adapter (INFO, PUBSUB)', async () => {
    await withClients(async (redlock) => {
      const reports = await redlock.checkIndependence();
      expect(reports.map((r) => r.role)).toEqual(['master', 'master', 'master']);
      expect(new Set(reports.map((r) => r.runId)).size).toBe(3);
      const resource = uniqueResource('inspect');
      const lock = await redlock.acquire(resource, 5_000);
      await fx.settled(resource, lock.value);
      const seen = await redlock.inspect(resource);
      expect(seen.nodes.map((n) => n.held)).toEqual([true, true, true]);
      expect(seen.nodes.every((n) => n.waiters === 0)).toBe(true);
      await lock.release();
    });
  });

  it('warns once per node when the offline queue is on (commands to a dead node may queue)', () => {
    const warnings: string[] = [];
    const list = fx.urls.map((url) => createClient({ url }));
    fx.redlock({ onWarning: (m) => warnings.push(m) }, list); // never used: nothing to close
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/node-redis client for 127\.0\.0\.1:\d+ has its offline queue enabled.*disableOfflineQueue: true/);
  });

  it('re-sends a script in full when the server lost its script cache (NOSCRIPT)', async () => {
    await withClients(async (redlock) => {
      const resource = uniqueResource('noscript');
      // Two resources: the acquire script, not the single-key SET NX.
      await (await redlock.acquire([resource, `${resource}-b`], 5_000)).release();
      await Promise.all([0, 1, 2].map((i) => fx.node(i).script('FLUSH')));
      const lock = await redlock.acquire([resource, `${resource}-b`], 5_000);
      await fx.settled(resource, lock.value);
      await lock.release();
      await until(async () => (await fx.values(resource)).every((v) => v === null), 'released on every node');
    });
  });

  it('takes 200 locks issued in one tick (node-redis pipelines them)', async () => {
    await withClients(async (redlock) => {
      const resources = Array.from({ length: 200 }, (_, i) => uniqueResource(`burst-${i}`));
      const locks = await Promise.all(resources.map((r) => redlock.acquire(r, 10_000)));
      expect(new Set(locks.map((l) => l.value)).size).toBe(200);
      await Promise.all(locks.map((l) => l.release()));
      await until(async () => (await fx.node(0).exists(...resources.map((r) => lockKey(r)))) === 0, 'released on node 0');
    });
  });
});
