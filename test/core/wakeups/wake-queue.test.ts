/**
 * Addressed wake-ups of plain locks (scripts/wake-queue.ts): processes waiting for a key queue on
 * its arbiter, and a release wakes the head of that queue only, on its process' own channel. Poll
 * delays are 10 minutes where only a wake-up may end a wait, so a grant proves who was woken.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock, type Lock, type RedlockOptions } from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { arbiterOf } from '../../../packages/core/src/rounds/arbiter-round.js';
import { runScript } from '../../harness/child-script.js';
import { DelayProxy } from '../../harness/delay-proxy.js';
import { DEFAULT_PREFIX, uniqueResource, until, useFixture } from '../helpers.js';

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

const NEVER_POLL = { retries: Infinity, delayMs: 600_000, jitterMs: 0 };
const DIST = join(process.cwd(), 'packages/core/dist/index.js');

describe('addressed wake-ups (3 nodes)', () => {
  const made: Redlock[] = [];
  // Declared before the fixture: the instances close while their servers still run.
  afterAll(async () => {
    await Promise.all(made.map((r) => r.close()));
  });
  const fx = useFixture(3);

  function make(options: RedlockOptions = {}): ProbedRedlock {
    const r = new ProbedRedlock(fx.urls, { onWarning: () => undefined, nodeTimeoutMs: 200, ...options });
    made.push(r);
    return r;
  }

  /** The processes queued for `resource` on every node (only its arbiter should have any). */
  async function queued(resource: string): Promise<string[][]> {
    return Promise.all(fx.urls.map((_, i) => fx.node(i).zrange(`${DEFAULT_PREFIX}waiters:${resource}`, '0', '-1')));
  }

  /**
   * Resolves once `redlock` waits for its turn on `resource`: queued on the arbiter, its wait parked
   * after its one repeat under the armed wake-up channel (a first wait repeats its attempt once).
   */
  function parked(redlock: ProbedRedlock, resource: string): Promise<void> {
    const key = `${DEFAULT_PREFIX}lock:${resource}`;
    return until(
      () => redlock.notices.places.waitingFor(key) === 1 && redlock.notices.places.inQueue(key) && redlock.notices.stats.armed === 1,
      'the waiter is queued and parked',
    );
  }

  /**
   * Resolves once every command these Redlocks wrote was answered. A round resolves on a majority:
   * the last node's command may still wait in its socket, and a server that reads two connections
   * in one turn of its loop may run another client's INFO first (seen under a busy core).
   */
  function answered(...redlocks: Redlock[]): Promise<void> {
    return until(
      () => redlocks.every((r) => r.nodes.every((node) => Number.isNaN(node.unansweredSince()))),
      'every command written was answered',
    );
  }

  /**
   * Lock commands (SET, scripts) each node has run so far, by node and command: when one more
   * was sent, the failure's diff says where and which.
   */
  async function lockCommands(): Promise<Record<string, number>> {
    const calls: Record<string, number> = {};
    for (let i = 0; i < fx.urls.length; i++) {
      const info = await fx.node(i).info('commandstats');
      for (const [, name, n] of info.matchAll(/^cmdstat_(set|evalsha|eval):calls=(\d+)/gm)) calls[`node ${i} ${name}`] = Number(n);
    }
    return calls;
  }

  it('a release wakes one waiting process, the one queued first, and the others not at all', async () => {
    const resource = uniqueResource('turns');
    const holder = make();
    const waiters = [make(), make(), make()];
    const first = await holder.acquire(resource, 60_000);
    const order: number[] = [];
    const grants: Array<Promise<Lock>> = [];
    for (const [i, w] of waiters.entries()) {
      grants.push(
        w.acquire(resource, 60_000, { retry: NEVER_POLL }).then((lock) => {
          order.push(i);
          return lock;
        }),
      );
      await parked(w, resource);
    }
    // One queue, on one node (the key's arbiter), in arrival order.
    const queues = await queued(resource);
    expect(queues.filter((q) => q.length > 0)).toEqual([waiters.map((w) => w.wakeQueue!.id)]);

    await first.release();
    const lock0 = await grants[0]!;
    // Only the head was woken: the others never left their waits.
    expect(waiters.map((w) => w.notices.stats.notice)).toEqual([1, 0, 0]);
    await lock0.release();
    await (await grants[1]!).release();
    await (await grants[2]!).release();
    expect(order).toEqual([0, 1, 2]);
    expect(waiters.map((w) => w.notices.stats.notice)).toEqual([1, 1, 1]);
    expect(waiters.map((w) => w.notices.stats.poll)).toEqual([0, 0, 0]);
    expect(await queued(resource)).toEqual([[], [], []]);
  });

  it('a process whose acquisition gave up leaves the queue, and the release wakes the next one', async () => {
    const resource = uniqueResource('leave');
    const holder = make();
    const leaving = make();
    const next = make();
    const first = await holder.acquire(resource, 60_000);
    const controller = new AbortController();
    const left = leaving.acquire(resource, 60_000, { retry: NEVER_POLL, signal: controller.signal }).catch((e: unknown) => e);
    await parked(leaving, resource);
    const granted = next.acquire(resource, 60_000, { retry: NEVER_POLL });
    await parked(next, resource);
    controller.abort(new Error('gave up'));
    expect(await left).toMatchObject({ message: 'gave up' });
    // Out of the queue by the time the rejection arrives: only `next` is left in it.
    const nextId = next.wakeQueue!.id;
    expect((await queued(resource)).flat()).toEqual([nextId]);
    await first.release();
    const lock = await granted;
    expect(next.notices.stats.notice).toBe(1);
    expect(next.notices.stats.poll).toBe(0);
    expect(leaving.notices.stats.notice).toBe(0);
    await lock.release();
  });

  it('an acquisition that times out or finds no quorum leaves no queue entry behind', async () => {
    const resource = uniqueResource('timeout');
    const holder = make();
    const late = make();
    const first = await holder.acquire(resource, 60_000);
    await expect(late.acquire(resource, 60_000, { timeoutMs: 30 })).rejects.toMatchObject({ name: 'LockNotAcquiredError' });
    expect((await queued(resource)).flat()).toEqual([]);
    // Two of three nodes unreachable: the one node that answers queued nobody either.
    const cut = new ProbedRedlock([fx.urls[0]!, 'redis://127.0.0.1:1', 'redis://127.0.0.1:2'], {
      onWarning: () => undefined,
      nodeTimeoutMs: 200,
    });
    made.push(cut);
    await expect(cut.acquire(resource, 60_000, { retry: { retries: 3, delayMs: 1, jitterMs: 0 } })).rejects.toMatchObject({
      name: 'QuorumUnavailableError',
    });
    expect((await queued(resource)).flat()).toEqual([]);
    await first.release();
  });

  it('a process woken with no waiter for the key passes its turn on to the next one', async () => {
    const resource = uniqueResource('pass');
    const other = uniqueResource('pass-other');
    const holder = make();
    const idle = make();
    const next = make();
    // `idle` listens on its channel (it waits for another key) and is queued first for this one, waiting for nothing here.
    const elsewhere = await holder.acquire(other, 60_000);
    const idleWait = idle.acquire(other, 60_000, { retry: NEVER_POLL });
    await parked(idle, other);
    const first = await holder.acquire(resource, 60_000);
    const granted = next.acquire(resource, 60_000, { retry: NEVER_POLL });
    await parked(next, resource);
    const arbiter = (await queued(resource)).findIndex((ids) => ids.length > 0);
    await fx.node(arbiter).zadd(`${DEFAULT_PREFIX}waiters:${resource}`, '0', idle.wakeQueue!.id);
    await first.release();
    const lock = await granted;
    expect(next.notices.stats.notice).toBe(1);
    expect(next.notices.stats.poll).toBe(0);
    await lock.release();
    await elsewhere.release();
    await (await idleWait).release();
  });

  it('a queued process that died is skipped: the release wakes the next one', async () => {
    expect(existsSync(DIST)).toBe(true); // run `npm run build` first
    const resource = uniqueResource('dead');
    const holder = make();
    const first = await holder.acquire(resource, 60_000);
    // A child process queues for the key, then is killed while it waits: its entry stays behind.
    const { child, done } = runScript(
      `
      const { Redlock } = await import(${JSON.stringify(DIST)});
      const redlock = new Redlock(${JSON.stringify(fx.urls)}, { onWarning: () => undefined, nodeTimeoutMs: 200 });
      redlock.once('wait', () => console.log('waiting'));
      await redlock.acquire(${JSON.stringify(resource)}, 60_000, { retry: { retries: Infinity, delayMs: 600_000, jitterMs: 0 } });
      `,
      (line) => {
        if (line === 'waiting') waiting = true;
      },
    );
    let waiting = false;
    await until(() => waiting, 'the child waits');
    await until(async () => (await queued(resource)).flat().length === 1, 'the child is queued');
    const next = make();
    const granted = next.acquire(resource, 60_000, { retry: NEVER_POLL });
    await parked(next, resource);
    child.kill('SIGKILL');
    await done;
    await first.release();
    const lock = await granted;
    expect(next.notices.stats.notice).toBe(1);
    expect(next.notices.stats.poll).toBe(0);
    await lock.release();
  });

  it('a plain waiter is woken by the release of a write lock on the same resource, and a reader by a plain release', async () => {
    const resource = uniqueResource('mixed');
    const writer = make();
    const plain = make();
    const held = await writer.acquire(resource, 60_000, { mode: 'write' });
    const granted = plain.acquire(resource, 60_000, { retry: NEVER_POLL });
    await parked(plain, resource);
    // A write lock's release notifies on the key's channel, which a plain waiter listens on too.
    await held.release();
    const lock = await granted;
    expect(plain.notices.stats.notice).toBe(1);
    expect(plain.notices.stats.poll).toBe(0);

    const reader = make();
    const reading = reader.acquire(resource, 60_000, { mode: 'read', retry: NEVER_POLL });
    await until(() => reader.notices.waiting === 1 && reader.notices.stats.armed === 1, 'the reader waits');
    // Nobody is queued for the plain lock: its release on the arbiter notifies on the key's channel.
    await lock.release();
    await (await reading).release();
    expect(reader.notices.stats.notice).toBe(1);
    expect(reader.notices.stats.poll).toBe(0);
  });

  it('a reader is not armed before its subscription on the key’s arbiter, where a plain release notifies alone', async () => {
    // Regression (1 or 2 runs in 40 of the test above): the reader counted its channel armed on
    // two nodes' confirmations, repeated its attempt, and the plain release's one notice, on the
    // arbiter, came before the arbiter had its subscription: the reader slept until its poll.
    // Here the reader's subscriber connection to the arbiter stalls until that notice went out.
    const proxies = await Promise.all(fx.urls.map((_, i) => DelayProxy.start(fx.cluster.server(i).port, 0)));
    const redlocks: Redlock[] = [];
    try {
      const urls = proxies.map((p) => p.url); // the same labels for both, so the same arbiter
      const resource = uniqueResource('arbiter-notice');
      const key = `${DEFAULT_PREFIX}lock:${resource}`;
      const plainHolder = new ProbedRedlock(urls, { onWarning: () => undefined, nodeTimeoutMs: 200 });
      const reader = new ProbedRedlock(urls, { onWarning: () => undefined, nodeTimeoutMs: 200 });
      redlocks.push(plainHolder, reader);
      const lock = await plainHolder.acquire(resource, 60_000);
      const arbiter = arbiterOf(reader.nodes, key, Infinity);
      await reader.connect();
      proxies[arbiter]!.holdNew();
      const reading = reader.acquire(resource, 60_000, { mode: 'read', retry: NEVER_POLL });
      const others = [0, 1, 2].filter((i) => i !== arbiter);
      await until(
        () => reader.notices.waiting === 1 && others.every((i) => reader.notices.subscribedOn(key, i)),
        'the reader waits, subscribed on the other nodes',
      );
      await lock.release(); // notifies on the arbiter only (nobody is queued)
      proxies[arbiter]!.release();
      await (await reading).release();
      expect(reader.notices.stats.poll).toBe(0);
    } finally {
      await Promise.all(redlocks.map((r) => r.close()));
      await Promise.all(proxies.map((p) => p.close()));
    }
  });

  it('a new acquisition of a process already queued waits for that process’ turn instead of racing the others', async () => {
    const resource = uniqueResource('no-barging');
    const holder = make();
    const before = make();
    const late = make({ cohort: false });
    const first = await holder.acquire(resource, 60_000);
    const order: string[] = [];
    const track = (name: string, p: Promise<Lock>): Promise<Lock> =>
      p.then((lock) => {
        order.push(name);
        return lock;
      });
    const a = track('late-1', late.acquire(resource, 60_000, { retry: NEVER_POLL }));
    await parked(late, resource);
    const b = track('before', before.acquire(resource, 60_000, { retry: NEVER_POLL }));
    await parked(before, resource);
    // Queued already: this one sends nothing and waits behind its own process' first waiter.
    await answered(holder, before, late);
    const commandsBefore = await lockCommands();
    const c = track('late-2', late.acquire(resource, 60_000, { retry: NEVER_POLL }));
    await until(() => late.notices.places.waitingFor(`${DEFAULT_PREFIX}lock:${resource}`) === 2, 'the second acquisition waits');
    await answered(late);
    expect(await lockCommands()).toEqual(commandsBefore);
    await first.release();
    await (await a).release();
    await (await b).release();
    await (await c).release();
    // late's process had the first turn, "before" the second, then late's second acquisition.
    expect(order).toEqual(['late-1', 'before', 'late-2']);
  });
});
