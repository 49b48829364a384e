import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NodeIndependenceError, Redlock } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { rejection, uniqueResource } from './helpers.js';

describe('node independence', () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let other: RedisServer;
  let third: RedisServer;
  const redlocks: Redlock[] = [];
  const make = (urls: string[], checkIndependence = false): Redlock => {
    const redlock = new Redlock(urls, { checkIndependence, onWarning: () => {} });
    redlocks.push(redlock);
    return redlock;
  };

  beforeAll(async () => {
    primary = await RedisServer.start();
    other = await RedisServer.start();
    third = await RedisServer.start();
    replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  });
  afterAll(async () => {
    await Promise.allSettled(redlocks.map((r) => r.close()));
    await Promise.all([replica, primary, other, third].map((s) => s.stop()));
  });

  it('passes for independent masters and reports each one', async () => {
    const reports = await make([primary.url, other.url, third.url]).checkIndependence();
    expect(reports.map((r) => [r.reachable, r.role])).toEqual([
      [true, 'master'],
      [true, 'master'],
      [true, 'master'],
    ]);
    expect(new Set(reports.map((r) => r.runId)).size).toBe(3);
  });

  it('rejects a real replica (--replicaof) with NodeIndependenceError naming it', async () => {
    const err = await rejection(make([primary.url, replica.url, other.url]).checkIndependence());
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect(err.problems).toEqual([`nodes[1] (127.0.0.1:${replica.port}) is a replica (role:slave)`]);
    expect(err.message).toContain('no replicas');
  });

  it('rejects the same server configured twice, naming both entries', async () => {
    const err = await rejection(make([other.url, primary.url, other.url]).checkIndependence());
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect(err.problems).toEqual([
      `nodes[0] (127.0.0.1:${other.port}) and nodes[2] (127.0.0.1:${other.port}) are the same server (same run_id)`,
    ]);
  });

  it('with checkIndependence: true, fails the first acquire (and the next) before locking anything', async () => {
    const resource = uniqueResource('independence');
    const redlock = make([primary.url, replica.url, other.url], true);
    expect(await rejection(redlock.acquire(resource, 10_000))).toBeInstanceOf(NodeIndependenceError);
    expect(await rejection(redlock.tryAcquire(resource, 10_000))).toBeInstanceOf(NodeIndependenceError);
    const direct = new Redis(primary.url);
    try {
      expect(await direct.get(`redlock:lock:${resource}`)).toBeNull();
    } finally {
      direct.disconnect();
    }
  });

  it('with checkIndependence: true and independent nodes, locks normally', async () => {
    const redlock = make([primary.url, other.url, third.url], true);
    const lock = await redlock.acquire(uniqueResource('independent'), 10_000);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('reports an unreachable node instead of calling it a misconfiguration', async () => {
    const gone = await RedisServer.start();
    const url = gone.url;
    await gone.stop();
    const reports = await make([primary.url, url, other.url]).checkIndependence();
    expect(reports[1]!.reachable).toBe(false);
    expect(reports[1]!.error).toBeDefined();
  });
});
