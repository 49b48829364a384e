/**
 * Phase-fair read-write locks on 5 real redis-server processes, step by step: each step waits for
 * the state on the nodes (who queues, who is in the batch) or for a lock, never for time. Waiters
 * poll once a minute here, so each hand-over that completes was made by a notice.
 */
import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, type Lock } from '@redlock-nest/core';
import { DEFAULT_PREFIX, rejection, uniqueResource, until, useFixture } from '../helpers.js';

const key = (kind: string, resource: string): string => `${DEFAULT_PREFIX}${kind}:${resource}`;
/** Waits long enough that only a notice moves a waiter on. */
const SLOW_POLL = { retries: Infinity, delayMs: 60_000, jitterMs: 0 };
const ALL = [0, 1, 2, 3, 4];

describe('read-write lock, phase-fair', () => {
  const fx = useFixture(5);

  /** Members of the ZSET `kind` of `resource` on every node (sorted), once they agree. */
  async function everywhere(kind: string, resource: string, count: number): Promise<void> {
    await until(
      async () => (await Promise.all(ALL.map((i) => fx.node(i).zcard(key(kind, resource))))).every((n) => n === count),
      `${count} in ${kind} on every node`,
    );
  }

  it('stops a new reader while a writer waits, and lets it in right after that writer, before the next one', async () => {
    const resource = uniqueResource('rw-pf-order');
    const [a, b, c, d] = [fx.redlock({ retry: SLOW_POLL }), fx.redlock({ retry: SLOW_POLL }), fx.redlock(), fx.redlock()];
    const first = await a.acquire(resource, 10_000, { mode: 'read' });
    const writing = b.acquire(resource, 10_000, { mode: 'write' });
    await everywhere('rw-writers', resource, 1);
    // A reader arriving now does not join the readers inside: it queues behind the writer.
    let readerIn = false;
    const reading = c.acquire(resource, 10_000, { mode: 'read' }).then((lock) => {
      readerIn = true;
      return lock;
    });
    await everywhere('rw-queued', resource, 1);
    expect(readerIn).toBe(false);
    await first.release();
    const writer = await writing;
    // A second writer arrives while the first one writes; the queued reader still goes first.
    let secondIn = false;
    const second = d.acquire(resource, 10_000, { mode: 'write' }).then((lock) => {
      secondIn = true;
      return lock;
    });
    await everywhere('rw-writers', resource, 1);
    await writer.release();
    const reader = await reading;
    expect(secondIn).toBe(false);
    // The release made the queued reader the batch; the batch entered, so writers wait for it to leave.
    await everywhere('rw-batch', resource, 0);
    expect(await d.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
    await reader.release();
    await (await second).release();
  });

  it('lets every reader queued behind a writer in together when it leaves, woken by one notice', async () => {
    const resource = uniqueResource('rw-pf-batch');
    const writer = await fx.redlock().acquire(resource, 10_000, { mode: 'write' });
    // Six readers in three "processes" (a Redlock each, with its own subscriber), two per process.
    const processes = [fx.redlock({ retry: SLOW_POLL }), fx.redlock({ retry: SLOW_POLL }), fx.redlock({ retry: SLOW_POLL })];
    const readers = processes.flatMap((r) => [
      r.acquire(resource, 10_000, { mode: 'read' }),
      r.acquire(resource, 10_000, { mode: 'read' }),
    ]);
    await everywhere('rw-queued', resource, 6);
    // Another writer waits too: the readers go before it.
    const next = fx.redlock({ retry: SLOW_POLL }).acquire(resource, 10_000, { mode: 'write' });
    await everywhere('rw-writers', resource, 1);
    await writer.release();
    const held: Lock[] = await Promise.all(readers);
    // All six hold the resource at once, the writer still waits, and none of them polled (a minute).
    expect(held.every((l) => l.state === 'held' && l.remainingMs > 0)).toBe(true);
    expect(await fx.node(0).zcard(key('rw-readers', resource))).toBe(6);
    expect(await fx.node(0).zcard(key('rw-writers', resource))).toBe(1);
    for (const lock of held) await lock.release();
    // The last reader out wakes the writer.
    await (await next).release();
  });

  it('lets the readers queued behind a writer in at once when that writer gives up', async () => {
    const resource = uniqueResource('rw-pf-gave-up');
    const inside = await fx.redlock().acquire(resource, 10_000, { mode: 'read' });
    const controller = new AbortController();
    const writing = fx.redlock().acquire(resource, 10_000, { mode: 'write', signal: controller.signal });
    await everywhere('rw-writers', resource, 1);
    const reading = fx.redlock({ retry: SLOW_POLL }).acquire(resource, 10_000, { mode: 'read' });
    await everywhere('rw-queued', resource, 1);
    // The writer gives up: its withdrawal, the last writer's, tells the queued reader (it polls once a minute).
    controller.abort();
    expect(await rejection(writing)).toBe(controller.signal.reason);
    const reader = await reading;
    expect(await fx.node(0).get(key('lock', resource))).toBe('#readers');
    await reader.release();
    await inside.release();
  });

  it('keeps a writer out while a batch it did not see yet is on its way in, but not past the batch\u2019s lease', async () => {
    const resource = uniqueResource('rw-pf-lease');
    const [secs, micros] = await fx.node(0).time();
    const nodeNow = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
    // A reader of another process is in the batch on every node and never comes (it died).
    await Promise.all(ALL.map((i) => fx.node(i).zadd(key('rw-batch', resource), nodeNow + 400, 'dead-reader')));
    const redlock = fx.redlock({ retry: { retries: Infinity, delayMs: 20, jitterMs: 20 } });
    expect(await redlock.tryAcquire(resource, 10_000, { mode: 'write' })).toBeNull();
    expect(await rejection(redlock.acquire(resource, 10_000, { mode: 'write', timeoutMs: 50 }))).toBeInstanceOf(LockNotAcquiredError);
    const writer = await redlock.acquire(resource, 10_000, { mode: 'write', timeoutMs: 10_000 });
    // Every node that let the writer in had dropped the dead reader's lapsed lease. (A node whose
    // clock read a hair earlier may have refused that attempt: the quorum won without it.)
    const granted = ALL.filter((i) => writer.acquireNodes[i]!.status === 'ok');
    expect(granted.length).toBeGreaterThanOrEqual(3);
    expect(await Promise.all(granted.map((i) => fx.node(i).zcard(key('rw-batch', resource))))).toEqual(granted.map(() => 0));
    await writer.release();
  });
});
