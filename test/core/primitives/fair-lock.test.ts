/**
 * Fair locks (`fair: true`): waiters queue on every node in order of arrival, a release
 * hands over to the head by a notice naming it, and a dead waiter loses its place after
 * its liveness key expires. Every Redlock instance here is a separate queue participant
 * (its own process id, notice channel and liveness key), as separate processes are; the
 * cross-process tests are in fair-lock-processes.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { RedlockArgumentError, type Lock, type Redlock } from '@redlock-nest/core';
import { rejection, uniqueResource, until, useFixture } from '../helpers.js';

/** Waits long enough that only a notice (or a test's explicit step) moves a waiter on. */
const SLOW_POLL = { retries: Infinity, delayMs: 60_000, jitterMs: 0 };

function queueKey(resource: string): string {
  return `redlock:fair-queue:${resource}`;
}

describe('fair lock', () => {
  const fx = useFixture(3);

  /** Waits until `count` waiters are queued for `resource` on every listed node. */
  async function queued(resource: string, count: number, nodes = [0, 1, 2]): Promise<void> {
    await until(
      async () => (await Promise.all(nodes.map((i) => fx.node(i).zcard(queueKey(resource))))).every((n) => n === count),
      `${count} waiter(s) queued on nodes ${nodes.join(',')}`,
    );
  }

  /**
   * Queues one waiter per Redlock in `redlocks` order (each one queued before the next
   * arrives), then releases `held`; resolves with the order in which they got the lock,
   * each holding it for a moment and checking that nobody else holds it meanwhile.
   */
  async function grantOrder(resource: string, held: Lock, redlocks: Redlock[], nodes?: number[]): Promise<number[]> {
    const order: number[] = [];
    let inside = 0;
    const done: Array<Promise<void>> = [];
    for (const [i, redlock] of redlocks.entries()) {
      done.push(
        redlock.using(
          resource,
          10_000,
          async () => {
            inside++;
            expect(inside).toBe(1);
            order.push(i);
            await new Promise((resolve) => setImmediate(resolve));
            inside--;
          },
          { fair: true },
        ),
      );
      await queued(resource, i + 1, nodes);
    }
    await held.release();
    await Promise.all(done);
    return order;
  }

  it('grants in order of arrival, each waiter woken by a notice naming it', async () => {
    const resource = uniqueResource('fifo');
    const holder = fx.redlock();
    const waiters = Array.from({ length: 4 }, () => fx.redlock({ retry: SLOW_POLL }));
    const held = await holder.acquire(resource, 10_000, { fair: true });
    expect(await grantOrder(resource, held, waiters)).toEqual([0, 1, 2, 3]);
    // The poll is a minute away: every hand-off was a notice.
    for (const w of waiters) expect(w.fair.stats.poll).toBe(0);
    expect(waiters.reduce((sum, w) => sum + w.fair.stats.notice, 0)).toBe(4);
    await queued(resource, 0);
  });

  it('keeps the order between waiters of one process too', async () => {
    const resource = uniqueResource('fifo-local');
    const holder = fx.redlock();
    const waiter = fx.redlock({ retry: SLOW_POLL });
    const held = await holder.acquire(resource, 10_000, { fair: true });
    expect(await grantOrder(resource, held, [waiter, waiter, waiter])).toEqual([0, 1, 2]);
  });

  it('takes a free lock with an empty queue in one round, without queueing', async () => {
    const resource = uniqueResource('fast');
    const redlock = fx.redlock();
    const lock = await redlock.acquire(resource, 10_000, { fair: true });
    expect(await Promise.all([0, 1, 2].map((i) => fx.node(i).exists(queueKey(resource))))).toEqual([0, 0, 0]);
    await lock.release();
    expect(await fx.values(resource)).toEqual([null, null, null]);
  });

  it('gives fencing tokens that grow with each fair holder', async () => {
    const resource = uniqueResource('fenced');
    const holder = fx.redlock();
    const waiter = fx.redlock({ retry: SLOW_POLL });
    const first = await holder.acquire(resource, 10_000, { fair: true, fencing: true });
    const next = waiter.acquire(resource, 10_000, { fair: true, fencing: true });
    await queued(resource, 1);
    await first.release();
    const second = await next;
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await second.release();
  });

  it('refuses fair over several resources with a typed error', async () => {
    const redlock = fx.redlock();
    const err = await rejection(redlock.acquire(['a', 'b'], 10_000, { fair: true }));
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(String(err.message)).toContain('one resource');
    await expect(redlock.acquire('a', 10_000, { fair: 'yes' as unknown as boolean })).rejects.toThrow('fair must be a boolean');
  });

  it('a waiter that gives up leaves the queue, and the next one is handed the lock', async () => {
    const resource = uniqueResource('leave');
    const holder = fx.redlock();
    const quitter = fx.redlock({ retry: SLOW_POLL });
    const next = fx.redlock({ retry: SLOW_POLL });
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const controller = new AbortController();
    const quitting = quitter.acquire(resource, 10_000, { fair: true, signal: controller.signal });
    await queued(resource, 1);
    const waiting = next.acquire(resource, 10_000, { fair: true });
    await queued(resource, 2);
    controller.abort(new Error('gave up'));
    await expect(quitting).rejects.toThrow('gave up');
    await queued(resource, 1);
    await held.release();
    await (await waiting).release();
  });

  it('drops an entry of its own process whose leave was lost, which its live lease would keep at the head', async () => {
    const resource = uniqueResource('stale-own');
    const holder = fx.redlock();
    // Polls behind the head every waiterTtl/3 (its retry delay applies only at the head).
    const redlock = fx.redlock({ retry: { retries: Infinity, delayMs: 50, jitterMs: 0 }, fairWaiterTtlMs: 600 });
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiting = redlock.acquire(resource, 10_000, { fair: true, timeoutMs: 8_000 });
    await queued(resource, 1);
    const [processId] = await fx.node(0).zrange(`redlock:fair-alive:${resource}`, '0', '-1');
    // What a lost leave leaves behind (a master that failed over before replicating it): an
    // entry of this live process, ahead of its waiter, whose acquisition ended long ago.
    const stale = `${processId!}:stale`;
    await Promise.all([0, 1, 2].map((i) => fx.node(i).zadd(queueKey(resource), 0, stale)));
    // The release hands over to the stale head: its notice finds no session.
    await held.release();
    const lock = await waiting;
    // Left on every node that named it (the last one's leave may land after the quorum's grant).
    await until(
      async () => (await Promise.all([0, 1, 2].map((i) => fx.node(i).zscore(queueKey(resource), stale)))).every((s) => s === null),
      'the stale entry is gone from every node',
    );
    await lock.release();
  });
});

describe('fair lock with a minority of nodes failing', () => {
  const fx = useFixture(3, { each: true });
  const fast = { nodeTimeoutMs: 100, retry: SLOW_POLL };

  /** Queues the Redlocks' waiters in order while `held` is held, on the listed nodes; resolves with the grant order. */
  async function order(
    resource: string,
    held: Lock,
    redlocks: Redlock[],
    nodes: number[],
    between?: () => Promise<void>,
  ): Promise<number[]> {
    const granted: number[] = [];
    let inside = 0;
    const done: Array<Promise<void>> = [];
    for (const [i, redlock] of redlocks.entries()) {
      const run = async (): Promise<void> => {
        inside++;
        expect(inside).toBe(1);
        granted.push(i);
        await new Promise((resolve) => setImmediate(resolve));
        inside--;
      };
      done.push(redlock.using(resource, 10_000, run, { fair: true }));
      await until(
        async () => (await Promise.all(nodes.map((n) => fx.node(n).zcard(queueKey(resource))))).every((c) => c === i + 1),
        `${i + 1} queued`,
      );
    }
    await between?.();
    await held.release();
    await Promise.all(done);
    return granted;
  }

  it('keeps the order with a node down', async () => {
    const resource = uniqueResource('down');
    await fx.cluster.server(2).kill();
    const holder = fx.redlock(fast);
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters = Array.from({ length: 4 }, () => fx.redlock(fast));
    expect(await order(resource, held, waiters, [0, 1])).toEqual([0, 1, 2, 3]);
  });

  it('keeps the order while a node is paused', async () => {
    const resource = uniqueResource('paused');
    const holder = fx.redlock(fast);
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters = Array.from({ length: 4 }, () => fx.redlock(fast));
    const paused = order(resource, held, waiters, [0, 1, 2], () => Promise.resolve(fx.cluster.server(2).pause()));
    expect(await paused).toEqual([0, 1, 2, 3]);
  });

  it('keeps the order when a node restarts empty mid-queue', async () => {
    const resource = uniqueResource('restarted');
    const holder = fx.redlock(fast);
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters = Array.from({ length: 4 }, () => fx.redlock(fast));
    const restart = async (): Promise<void> => {
      await fx.cluster.server(0).restart();
      expect(await fx.node(0).zcard(queueKey(resource))).toBe(0);
    };
    expect(await order(resource, held, waiters, [0, 1, 2], restart)).toEqual([0, 1, 2, 3]);
  });

  it('a late arrival on a restarted node still queues behind the waiters it lost', async () => {
    const resource = uniqueResource('late');
    const holder = fx.redlock(fast);
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const early = [fx.redlock(fast), fx.redlock(fast)];
    const late = fx.redlock(fast);
    const granted: string[] = [];
    const done = early.map(async (r, i) => {
      await until(async () => (await fx.node(1).zcard(queueKey(resource))) === i, 'previous queued');
      await r.using(resource, 10_000, () => void granted.push(`early${i}`), { fair: true });
    });
    await until(async () => (await fx.node(1).zcard(queueKey(resource))) === 2, 'both queued');
    await fx.cluster.server(0).restart();
    // Node 0 lost the queue and its ticket counter: the late waiter's ticket there is 1,
    // but its agreed ticket is the largest of a quorum's, so it queues last everywhere.
    const lateDone = late.using(resource, 10_000, () => void granted.push('late'), { fair: true });
    await until(async () => (await fx.node(1).zcard(queueKey(resource))) === 3, 'late queued');
    await held.release();
    await Promise.all([...done, lateDone]);
    expect(granted).toEqual(['early0', 'early1', 'late']);
  });
});
