/**
 * EtcdLocks on a real 3-member etcd cluster: mutual exclusion across processes (checked outside
 * etcd) with fencing tokens strictly increasing in grant order, FIFO waiters across processes,
 * semaphore and read-write semantics, and close(): the process exits on its own and leaves no
 * key or lease. Needs `npm run build` (children load the built package).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, RedlockArgumentError, type Lock } from '@redlock-nest/core';
import { EtcdLocks } from '@redlock-nest/etcd';
import { ETCD_ENTRY, EtcdCluster, grantsIn, keysUnder, leases, rejection, runFixture, uniqueResource, until } from './helpers.js';

let cluster: EtcdCluster;
let dir: string;
const open: EtcdLocks[] = [];

function engine(): EtcdLocks {
  const locks = new EtcdLocks({ hosts: cluster.hosts, requestTimeoutMs: 400 });
  open.push(locks);
  return locks;
}

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
  dir = mkdtempSync(join(tmpdir(), 'redlock-nest-etcd-test-'));
});

afterAll(async () => {
  await Promise.all(open.map((l) => l.close()));
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('EtcdLocks', () => {
  it('refuses bad options with the fix named', () => {
    expect(() => new EtcdLocks({ hosts: [] })).toThrow(RedlockArgumentError);
    expect(() => new EtcdLocks({ hosts: ['127.0.0.1:2379'] })).toThrow(/client URL with its port, like 'http:\/\/127.0.0.1:2379'/);
    expect(() => new EtcdLocks({ hosts: ['http://a:2379', 'http://a:2379'] })).toThrow(/lists a member twice/);
    expect(() => new EtcdLocks({ hosts: ['http://u:p@a:2379'] })).toThrow(/auth: \{ username, password \}/);
  });

  it('4 processes: never two holders at once, tokens strictly increasing in grant order', async () => {
    const resource = uniqueResource('mutex');
    const runDir = mkdtempSync(join(dir, 'mutex-'));
    const workers = ['a', 'b', 'c', 'd'].map((name) =>
      runFixture('etcd-worker.mjs', [ETCD_ENTRY, JSON.stringify(cluster.hosts), resource, name, '10', '3000', runDir, '5']),
    );
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
    expect(workers.flatMap((w) => w.lines.filter((l) => l.startsWith('overlap')))).toEqual([]);
    const grants = grantsIn(runDir);
    expect(grants).toHaveLength(40);
    for (let i = 1; i < grants.length; i++) expect(grants[i]![1]).toBeGreaterThan(grants[i - 1]![1]);
  });

  it('grants waiters from several processes in order of arrival (FIFO)', async () => {
    const resource = uniqueResource('fifo');
    const runDir = mkdtempSync(join(dir, 'fifo-'));
    const holder = await engine().acquire(resource, 10_000);
    const queue = `redlock/lock/${resource.length}:${resource}/q/`;
    const workers = [];
    for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) {
      workers.push(runFixture('etcd-worker.mjs', [ETCD_ENTRY, JSON.stringify(cluster.hosts), resource, name, '1', '3000', runDir, '1']));
      // Each waiter's key is in the queue before the next one starts.
      await until(async () => (await keysUnder(cluster.hosts[0]!, queue)).length === i + 2, `${name} queued`);
    }
    await holder.release();
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
    expect(grantsIn(runDir).map(([name]) => name)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a semaphore admits `permits` holders, the next waits for a permit', async () => {
    const locks = engine();
    const resource = uniqueResource('sem');
    const first = await locks.acquire(resource, 5_000, { permits: 2 });
    const second = await locks.acquire(resource, 5_000, { permits: 2 });
    expect(await locks.tryAcquire(resource, 5_000, { permits: 2 })).toBeNull();
    // A full semaphore says so (an HTTP answer names its permits), unlike a held lock.
    const full = await rejection(locks.acquire(resource, 5_000, { permits: 2, retry: false }));
    expect(full).toBeInstanceOf(LockNotAcquiredError);
    expect(full.permits).toBe(2);
    expect(full.message).toContain('all 2 permits are in use');
    // Semaphores are apart from locks of the same name.
    const plain = await locks.acquire(resource, 5_000);
    const third = locks.acquire(resource, 5_000, { permits: 2, timeoutMs: 10_000 });
    await second.release();
    const granted = await third;
    expect(first.fencingToken).toBeUndefined();
    await Promise.all([first, granted, plain].map((l) => l.release()));
  });

  it('read-write: readers share, a writer waits for them, and a reader behind a waiting writer waits too', async () => {
    const locks = engine();
    const resource = uniqueResource('rw');
    const readers = await Promise.all([locks.acquire(resource, 5_000, { mode: 'read' }), locks.acquire(resource, 5_000, { mode: 'read' })]);
    const order: string[] = [];
    const writer = locks.acquire(resource, 5_000, { mode: 'write', timeoutMs: 10_000 }).then((l) => (order.push('writer'), l));
    const queue = `redlock/lock/${resource.length}:${resource}/q/`;
    await until(async () => (await keysUnder(cluster.hosts[0]!, queue)).length === 3, 'the writer queued');
    const lateReader = locks.acquire(resource, 5_000, { mode: 'read', timeoutMs: 10_000 }).then((l) => (order.push('reader'), l));
    expect(await locks.tryAcquire(resource, 5_000, { mode: 'read' })).toBeNull();
    await Promise.all(readers.map((r) => r.release()));
    const w: Lock = await writer;
    expect(order).toEqual(['writer']);
    await w.release();
    await (await lateReader).release();
    expect(order).toEqual(['writer', 'reader']);
  });

  it("contended past timeoutMs: LockNotAcquiredError with the holder's time left", async () => {
    const locks = engine();
    const resource = uniqueResource('busy');
    const held = await locks.acquire(resource, 5_000);
    const err = await rejection(engine().acquire(resource, 5_000, { timeoutMs: 300 }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.retryAfterMs).toBeGreaterThan(0);
    await held.release();
  });

  it('close(): the process exits on its own and leaves no key and no lease behind', async () => {
    const resource = uniqueResource('close');
    const before = new Set(await leases(cluster.hosts[0]!));
    const script = `
      const { EtcdLocks } = await import(${JSON.stringify(pathToFileURL(ETCD_ENTRY).href)});
            const locks = new EtcdLocks({ hosts: ${JSON.stringify(cluster.hosts)} });
      const held = await locks.acquire(${JSON.stringify(resource)}, 30_000);
      const waiting = locks.acquire(${JSON.stringify(resource)}, 30_000, { timeoutMs: 500 }).catch((e) => e.name);
      void locks.using(${JSON.stringify(`${resource}:b`)}, 30_000, () => new Promise(() => {})).catch(() => undefined);
      console.log(await waiting);
      await locks.close();
      console.log(held.state);
    `;
    const child = runFixture('run-script.mjs', [script]);
    expect(await child.exited).toBe(0);
    expect(child.lines).toEqual(['LockNotAcquiredError', 'released']);
    expect(await keysUnder(cluster.hosts[0]!, 'redlock/')).toEqual(expect.not.arrayContaining([expect.stringContaining(resource)]));
    expect((await leases(cluster.hosts[0]!)).filter((id) => !before.has(id))).toEqual([]);
  });
});
