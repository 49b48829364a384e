/**
 * `inspect` understands every primitive, on 3 real redis-servers: a read-write lock's readers
 * (count, each holder) and its writer, a semaphore's "k of N permits" with each holder, a fair
 * queue's waiters in order, and the processes queued for a plain lock's addressed wake-up.
 * Owners are shown as hashes, never as tokens.
 */
import { describe, expect, it } from '@jest/globals';
import { type Lock, type Redlock } from '@redlock-nest/core';
import { uniqueResource, until, useFixture } from '../core/helpers.js';

/** What `inspect` shows for an owner token (first 12 hex digits of its SHA-256). */
async function hashOf(token: string): Promise<string> {
  const { createHash } = await import('node:crypto');
  return createHash('sha256').update(token).digest('hex').slice(0, 12);
}

/** Resolves once `redlock`'s next acquisition of `resource` had to wait (its first attempt found it held). */
function waited(redlock: Redlock, resource: string): Promise<void> {
  return new Promise((resolve) => {
    const off = redlock.on('wait', (e) => {
      if (e.resources[0] !== resource) return;
      off();
      resolve();
    });
  });
}

describe('inspect shows every primitive', () => {
  const fx = useFixture(3);

  it('a read-write lock: each reader holding it, the waiting writer, then the writer as the holder', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('rw');
    const readers = [
      await redlock.acquire(resource, 10_000, { mode: 'read' }),
      await fx.redlock().acquire(resource, 10_000, { mode: 'read' }),
    ];
    const writerRedlock = fx.redlock();
    const writerWaits = waited(writerRedlock, resource);
    const writer = writerRedlock.acquire(resource, 10_000, { mode: 'write', timeoutMs: 30_000 });
    await writerWaits;

    const state = await redlock.inspect(resource);
    expect(state.holder).toBeUndefined();
    expect(state.readers?.count).toBe(2);
    expect(state.readers?.holders.map((h) => h.owner).sort()).toEqual((await Promise.all(readers.map((r) => hashOf(r.value)))).sort());
    for (const h of state.readers!.holders) {
      expect(h.nodes).toBeGreaterThanOrEqual(state.quorum);
      expect(h.ttlMs).toBeGreaterThan(0);
    }
    expect(state.writersWaiting).toBe(1);
    // The readers' marker on the lock key is no owner (a quorum has it; the last node may still be on its way).
    expect(state.nodes.filter((n) => n.readPhase === true).length).toBeGreaterThanOrEqual(state.quorum);
    expect(state.nodes.every((n) => n.owner === undefined)).toBe(true);
    expect(JSON.stringify(state)).not.toContain(readers[0]!.value);

    await Promise.all(readers.map((r) => r.release()));
    const written = await writer;
    const after = await redlock.inspect(resource);
    expect(after.holder).toBe(await hashOf(written.value));
    expect(after.readers).toBeUndefined();
    expect(after.writersWaiting).toBeUndefined();
    await written.release();
  });

  it('a semaphore: k of N permits with each holder, and the held permits without N', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('sem');
    const permits = [await redlock.acquire(resource, 10_000, { permits: 3 }), await fx.redlock().acquire(resource, 10_000, { permits: 3 })];
    const state = await redlock.inspect(resource, { permits: 3 });
    expect(state.permits?.held).toBe(2);
    expect(state.permits?.of).toBe(3);
    expect(state.permits?.holders.map((h) => h.owner).sort()).toEqual((await Promise.all(permits.map((p) => hashOf(p.value)))).sort());
    expect(new Set(state.permits?.holders.map((h) => h.slot)).size).toBe(2);
    expect(state.holder).toBeUndefined();

    const scanned = await redlock.inspect(resource);
    expect(scanned.permits?.held).toBe(2);
    expect(scanned.permits?.of).toBeUndefined();
    const slotsOf = (holders: ReadonlyArray<{ slot: number; owner: string }> = []) => holders.map(({ slot, owner }) => ({ slot, owner }));
    expect(slotsOf(scanned.permits?.holders)).toEqual(slotsOf(state.permits?.holders));

    await Promise.all(permits.map((p) => p.release()));
    expect((await redlock.inspect(resource, { permits: 3 })).permits).toEqual({ held: 0, of: 3, holders: [] });
  });

  it('a fair lock: its waiters in the order they get it', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('fair');
    const held = await redlock.acquire(resource, 10_000, { fair: true });
    const [first, second] = [fx.redlock(), fx.redlock()];
    const firstWaits = waited(first, resource);
    const firstLock = first.acquire(resource, 10_000, { fair: true, timeoutMs: 30_000 });
    await firstWaits;
    const secondWaits = waited(second, resource);
    const secondLock = second.acquire(resource, 10_000, { fair: true, timeoutMs: 30_000 });
    await secondWaits;

    const queue = (await redlock.inspect(resource)).fairQueue;
    expect(queue).toHaveLength(2);
    await held.release();
    const next: Lock = await firstLock;
    // The first waiter left the queue with its grant: the second is next.
    const after = await redlock.inspect(resource);
    expect(after.holder).toBe(await hashOf(next.value));
    expect(after.fairQueue).toEqual([queue![1]]);
    await next.release();
    await (await secondLock).release();
  });

  it('a plain lock: the processes queued for its addressed wake-up', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('queued');
    const held = await redlock.acquire(resource, 10_000);
    const waiters = [fx.redlock(), fx.redlock()].map((r) => r.acquire(resource, 10_000, { timeoutMs: 30_000 }));
    await until(async () => (await redlock.inspect(resource)).queued === 2, 'both processes queued on the arbiter');
    await held.release();
    await Promise.all(waiters.map((w) => w.then((lock) => lock.release())));
    await until(async () => (await redlock.inspect(resource)).queued === undefined, 'the queue emptied');
  });
});
