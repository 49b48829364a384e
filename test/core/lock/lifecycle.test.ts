import { describe, expect, it } from '@jest/globals';
import { LockLostError, Redlock, RedlockClosedError } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { DelayProxy } from '../../harness/delay-proxy.js';
import { aborted, fastClient, nodeRedisClient, useFixture, lockKey, rejection, uniqueResource, until } from '../helpers.js';

describe('instance lifecycle', () => {
  const fx = useFixture(3);

  const connectedClients = async (i: number): Promise<number> =>
    Number(/^connected_clients:(\d+)/m.exec(await fx.node(i).info('clients'))![1]);

  it('isolates key prefixes: two tenants never contend, and their keys are where operators look', async () => {
    const tenantA = fx.redlock({ keyPrefix: 'tenant-a:' });
    const tenantB = fx.redlock({ keyPrefix: 'tenant-b:' });
    const resource = uniqueResource('shared-name');

    const a = await tenantA.acquire(resource, 30_000, { retry: false });
    const b = await tenantB.acquire(resource, 30_000, { retry: false });
    await until(async () => (await fx.values(resource, [0, 1, 2], 'tenant-a:')).every((v) => v === a.value), 'tenant a keys');
    await until(async () => (await fx.values(resource, [0, 1, 2], 'tenant-b:')).every((v) => v === b.value), 'tenant b keys');
    expect(await fx.values(resource)).toEqual([null, null, null]);
    // The same prefix does contend.
    expect(await fx.redlock({ keyPrefix: 'tenant-a:' }).tryAcquire(resource, 30_000)).toBeNull();
  });

  it('leaves clients passed in open on close(), and closes the ones it created from URLs', async () => {
    const clients = [0, 1, 2].map((i) => fx.client(i));
    const borrowed = fx.redlock({}, clients);
    await (await borrowed.acquire(uniqueResource('borrowed'), 30_000)).release();
    await borrowed.close();
    for (const client of clients) expect(await client.ping()).toBe('PONG');

    const before = await connectedClients(0);
    const owning = fx.redlock();
    await (await owning.acquire(uniqueResource('owned'), 30_000)).release();
    expect(await connectedClients(0)).toBe(before + 1);
    await owning.close();
    await until(async () => (await connectedClients(0)) === before, 'the created connection was closed');
  });

  it('hands clients passed in back connected: close() waits for the connect it started on them', async () => {
    // Regression (seen once under load): acquire and release need only a majority, so close()
    // returned while the library's own connect of the slowest lazy client passed in was still
    // under way, and the caller's next command on it (no offline queue) was refused. A slow link
    // to node 2 makes that the normal case instead of a rare one.
    const proxy = await DelayProxy.start(fx.cluster.server(2).port, 100);
    const slow = fastClient(proxy.url);
    try {
      const clients = [fx.client(0), fx.client(1), slow];
      const redlock = fx.redlock({}, clients);
      await (await redlock.acquire(uniqueResource('slow-borrowed'), 30_000)).release();
      await redlock.close();
      for (const client of clients) expect(await client.ping()).toBe('PONG');
    } finally {
      slow.disconnect();
      await proxy.close();
    }
  });

  it('leaves no listeners behind on clients passed in, however many Redlocks used and closed them', async () => {
    const clients = [0, 1, 2].map((i) => fx.client(i));
    const events = ['ready', 'error', 'close', 'end'] as const;
    const listeners = (): number[] => clients.flatMap((c) => events.map((e) => c.listenerCount(e)));
    const before = listeners();
    // More Redlocks than EventEmitter's default limit of 10 listeners per event: a leak would
    // also show as a MaxListenersExceededWarning, which fails the test.
    for (let i = 0; i < 12; i++) {
      const redlock = fx.redlock({}, clients);
      await (await redlock.acquire(uniqueResource('listeners'), 30_000)).release();
      await redlock.close();
    }
    expect(listeners()).toEqual(before);
  });

  it('leaves no listeners behind on node-redis clients passed in either', async () => {
    const clients = fx.urls.map((url) => nodeRedisClient(url));
    try {
      const events = ['ready', 'error', 'reconnecting', 'end'] as const;
      const listeners = (): number[] => clients.flatMap((c) => events.map((e) => c.listenerCount(e)));
      const before = listeners();
      for (let i = 0; i < 12; i++) {
        const redlock = fx.redlock({}, clients);
        await (await redlock.acquire(uniqueResource('node-redis-listeners'), 30_000)).release();
        await redlock.close();
      }
      expect(listeners()).toEqual(before);
    } finally {
      for (const client of clients) if (client.isOpen) client.destroy();
    }
  });

  it('warns (through onWarning) about a client passed in whose options make failover slow, without secrets', () => {
    const warnings: string[] = [];
    const slow = new Redis({ host: '127.0.0.1', port: fx.cluster.server(0).port, password: 's3cret-pw', lazyConnect: true });
    const fast = fx.client(1);
    try {
      fx.redlock({ onWarning: (m) => warnings.push(m) }, [slow, fast, fx.urls[2]!]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`127.0.0.1:${fx.cluster.server(0).port}`);
      expect(warnings[0]).toMatch(/enableOfflineQueue is not false.*no commandTimeout.*maxRetriesPerRequest is not 0/);
      expect(warnings[0]).toContain('consider enableOfflineQueue: false, maxRetriesPerRequest: 0 and a short commandTimeout');
      expect(warnings[0]).not.toContain('s3cret-pw');
    } finally {
      slow.disconnect();
    }
  });

  it('on close(), releases every held lock, aborts their signals with "released", and ends using()', async () => {
    const redlock = fx.redlock();
    const plain = uniqueResource('held-at-close');
    const routine = uniqueResource('using-at-close');
    const lock = await redlock.acquire(plain, 30_000);

    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const using = redlock.using(routine, 30_000, async (l) => {
      entered();
      await aborted(l.signal);
    });
    await inside;
    expect(redlock.activeLocks).toBe(2);

    await redlock.close();
    expect(redlock.activeLocks).toBe(0);
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('released');
    const usingErr = await rejection(using);
    expect(usingErr).toBeInstanceOf(LockLostError);
    expect(usingErr.reason).toBe('released');
    await until(async () => (await fx.values(plain)).every((v) => v === null), 'the plain lock was released');
    await until(async () => (await fx.values(routine)).every((v) => v === null), 'the using() lock was released');

    // Closing is final and idempotent.
    expect(await rejection(redlock.acquire(plain, 30_000))).toBeInstanceOf(RedlockClosedError);
    await redlock.close();
  });

  it('does not hand out (or leak) a lock whose attempt was in flight when close() was called', async () => {
    const redlock = fx.redlock();
    await redlock.connect();
    const resource = uniqueResource('close-race');
    const acquiring = redlock.acquire(resource, 30_000);
    const closing = redlock.close();
    const outcome = await acquiring.then(
      (lock) => ({ lock, err: undefined }),
      (err: unknown) => ({ lock: undefined, err }),
    );
    await closing;
    expect(redlock.activeLocks).toBe(0);
    // Either the caller learns the instance closed, or it got a lock that close() already gave up.
    if (outcome.lock) expect(outcome.lock.signal.aborted).toBe(true);
    else expect(outcome.err).toBeInstanceOf(RedlockClosedError);
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'nothing is left locked');
  });

  it('ends an acquisition waiting between retries when close() is called', async () => {
    const holder = fx.redlock();
    const redlock = fx.redlock();
    const resource = uniqueResource('close-while-waiting');
    await holder.acquire(resource, 30_000);
    const calls = await fx.lockCommands(0);
    // A minute between attempts: only close() can end this wait within the test.
    const waiting = redlock.acquire(resource, 30_000, { retry: { retries: Infinity, delayMs: 60_000, jitterMs: 0 } });
    const outcome = rejection(waiting);
    await until(async () => (await fx.lockCommands(0)) > calls, 'the first attempt ran');
    await redlock.close();
    expect(await outcome).toBeInstanceOf(RedlockClosedError);
  });

  it('serves many concurrent first calls of a fresh instance (no "not connected yet" failures)', async () => {
    // Regression: calls arriving while the first call's connect was under way were sent
    // to a socket still connecting and failed at once as QuorumUnavailableError.
    const redlock = fx.redlock();
    const locks = await Promise.all(Array.from({ length: 10 }, (_, i) => redlock.tryAcquire(uniqueResource(`first-${i}`), 30_000)));
    expect(locks.every((l) => l !== null)).toBe(true);
    expect(redlock.activeLocks).toBe(10);
    await Promise.all(locks.map((l) => l!.release()));
    expect(redlock.activeLocks).toBe(0);
  });

  it('keeps the key format `${keyPrefix}lock:${resource}`', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('format');
    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value);
    expect(await fx.node(0).get(`redlock:lock:${resource}`)).toBe(lock.value);
    expect(lockKey(resource)).toBe(`redlock:lock:${resource}`);
  });

  it('creates nothing that outlives close(): a closed instance holds no locks and no connections', async () => {
    const before = await connectedClients(1);
    const redlock = new Redlock(fx.urls, { onWarning: () => {} });
    const lock = await redlock.acquire(uniqueResource('hygiene'), 30_000);
    await lock.extend(30_000);
    await redlock.close();
    expect(redlock.activeLocks).toBe(0);
    await until(async () => (await connectedClients(1)) === before, 'no connection left');
  });
});
