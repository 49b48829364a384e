import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeIndependenceError, Redlock, RedlockArgumentError } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisServer } from '../../harness/redis-server.js';
import { rejection, uniqueResource, until } from '../helpers.js';

describe('node independence', () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let other: RedisServer;
  let third: RedisServer;
  /** A server listening on TCP and on a unix socket: one run_id under two addresses. */
  let sameServerTcp: RedisServer;
  const socketDir = mkdtempSync(join(tmpdir(), 'redlock-sock-'));
  const socketPath = join(socketDir, 'redis.sock');
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
    sameServerTcp = await RedisServer.start({ args: ['--unixsocket', socketPath, '--unixsocketperm', '700'] });
  });
  afterAll(async () => {
    await Promise.allSettled(redlocks.map((r) => r.close()));
    await Promise.all([replica, primary, other, third, sameServerTcp].map((s) => s.stop()));
    rmSync(socketDir, { recursive: true, force: true });
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

  it('refuses the same server listed twice by address when the Redlock is created (URL, options, localhost)', () => {
    expect(() => make([other.url, primary.url, other.url])).toThrow(
      new RedlockArgumentError(
        `nodes[0] (127.0.0.1:${other.port}) and nodes[2] (127.0.0.1:${other.port}) are the same Redis server: a lock would ` +
          'count it twice toward the quorum, so it would stop being a majority of independent servers. List each independent server once.',
      ),
    );
    expect(() => make([`redis://localhost:${other.port}`, primary.url, { port: other.port }] as never)).toThrow(
      /nodes\[0\] \(localhost:\d+\) and nodes\[2\] \(localhost:\d+\) are the same Redis server/,
    );
    expect(() => make([primary.url, `redis://[::1]:${primary.port}`] as never)).toThrow(RedlockArgumentError);
    const client = new Redis(other.url, { lazyConnect: true });
    try {
      // A client passed in says where it connects (its options): compared too.
      expect(() => make([primary.url, client, `redis://localhost:${other.port}/3`] as never)).toThrow(
        /nodes\[1\] \(127\.0\.0\.1:\d+\) and nodes\[2\] \(localhost:\d+\) are the same Redis server/,
      );
    } finally {
      client.disconnect();
    }
  });

  it('rejects the same server reached under two addresses (TCP and its unix socket) by run_id, naming both entries', async () => {
    const err = await rejection(make([sameServerTcp.url, primary.url, { path: socketPath }] as never).checkIndependence());
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect(err.sameServer).toBe(true);
    expect(err.problems).toEqual([
      `nodes[0] (127.0.0.1:${sameServerTcp.port}) and nodes[2] (${socketPath}) are the same server (same run_id)`,
    ]);
    // A replica alone is not a same-server problem (the Nest module's 'warn' mode tells them apart).
    const replicaErr = await rejection(make([primary.url, replica.url, other.url]).checkIndependence());
    expect(replicaErr.sameServer).toBe(false);
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

describe('node independence, nodes that come up later', () => {
  it('checks a node that was down at the first check once it connects, and fails later operations if it is a replica', async () => {
    const primary = await RedisServer.start();
    const other = await RedisServer.start();
    const late = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    const redlock = new Redlock([primary.url, late.url, other.url], { checkIndependence: true, onWarning: () => {} });
    try {
      await late.kill();
      // Two of three masters answer: the check passes with the late node unreachable, and locks work.
      const lock = await redlock.acquire(uniqueResource('late-replica'), 10_000);
      expect((await redlock.checkIndependence())[1]!.reachable).toBe(false);
      await lock.release();

      await late.restart(); // back, still configured as a replica of nodes[0]
      await until(
        async () =>
          (await redlock.checkIndependence().then(
            () => undefined,
            (e: unknown) => e,
          )) instanceof NodeIndependenceError,
        'the re-check after the late node connected',
      );
      const err = await rejection(redlock.acquire(uniqueResource('late-replica'), 10_000));
      expect(err).toBeInstanceOf(NodeIndependenceError);
      expect(err.problems).toEqual([`nodes[1] (127.0.0.1:${late.port}) is a replica (role:slave)`]);
    } finally {
      await redlock.close();
      await Promise.all([primary, other, late].map((s) => s.stop()));
    }
  });

  it('re-checks a late independent master without failing anything', async () => {
    const [a, b, late] = await Promise.all([RedisServer.start(), RedisServer.start(), RedisServer.start()]);
    const redlock = new Redlock([a.url, late.url, b.url], { checkIndependence: true, onWarning: () => {} });
    try {
      await late.kill();
      await (await redlock.acquire(uniqueResource('late-master'), 10_000)).release();
      await late.restart();
      await until(async () => (await redlock.checkIndependence())[1]!.reachable, 'the re-check reached the late node');
      expect((await redlock.checkIndependence()).map((r) => r.role)).toEqual(['master', 'master', 'master']);
      await (await redlock.acquire(uniqueResource('late-master'), 10_000)).release();
    } finally {
      await redlock.close();
      await Promise.all([a, b, late].map((s) => s.stop()));
    }
  });
});
