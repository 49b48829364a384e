/**
 * Waiting by release notice (issue 6): a waiter is woken by the PUBLISH of the release
 * script, not by polling. Poll delays are set to 10 minutes where only a notice may
 * wake the waiter, so an acquisition completing at all proves the notice woke it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type Lock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { CHILD_GUARD_ARGS } from '../../harness/child-process-guard.js';
import { RedisCluster } from '../../harness/redis-server.js';
import { CLIENT_KINDS, DEFAULT_PREFIX, fastClient, lockKey, nodesOf, uniqueResource, until } from '../helpers.js';

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

const NEVER_POLL = { retries: 50, delayMs: 600_000, jitterMs: 0 };
const quiet: RedlockOptions = { onWarning: () => undefined, nodeTimeoutMs: 100 };

describe.each(CLIENT_KINDS)('release notices (%s nodes)', (client) => {
  let cluster: RedisCluster;
  let direct: Redis[];
  const redlocks: Redlock[] = [];
  const passedIn: Array<() => Promise<void>> = [];

  /** Every server as a node, with this run's client (node-redis clients are closed after all). */
  function nodes(): RedisNodeInput[] {
    const made = nodesOf(client, cluster.urls);
    passedIn.push(() => made.close());
    return made.nodes;
  }

  /**
   * A test of ioredis specifics (clients without duplicate(), a child process given URLs): run once,
   * and not registered for the other client kind (nothing is reported as skipped).
   */
  const ioredisOnly = (name: string, fn: () => Promise<void>): void => {
    if (client === 'ioredis') it(name, fn);
  };

  function make(nodes: RedisNodeInput[], options: RedlockOptions = {}): ProbedRedlock {
    const r = new ProbedRedlock(nodes, { ...quiet, ...options });
    redlocks.push(r);
    return r;
  }

  /** Subscriber connections the servers see. */
  async function pubsubClients(): Promise<number> {
    let total = 0;
    for (const c of direct) {
      const list = (await c.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
      total += list.split('\n').filter((line) => line.trim().length > 0).length;
    }
    return total;
  }

  /** Resolves once `redlock` has `count` waits parked on notices after `armed` arming wake-ups. */
  function parked(redlock: ProbedRedlock, count: number, armed: number): Promise<void> {
    return until(() => redlock.notices.waiting === count && redlock.notices.stats.armed === armed, `${count} parked waiter(s)`);
  }

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map((url) => fastClient(url));
    await Promise.all(direct.map((c) => c.connect()));
  });
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.close()));
    await Promise.all(passedIn.map((close) => close()));
    await Promise.all(direct.map((c) => c.quit()));
    await cluster.stop();
  });

  it('wakes a waiter by the release notice (its poll delay is 10 minutes)', async () => {
    const resource = uniqueResource('notice');
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: NEVER_POLL });
    const held = await holder.acquire(resource, 60_000);
    const waiting = waiter.acquire(resource, 60_000);
    await parked(waiter, 1, 1);
    await held.release();
    const lock = await waiting;
    expect(waiter.notices.stats.notice).toBe(1);
    expect(waiter.notices.stats.poll).toBe(0);
    await lock.release();
  });

  it('opens no subscriber connection while nobody waits', async () => {
    const resource = uniqueResource('idle');
    // Not the suite's 100 ms node timeout: on a busy machine an answer can take longer, and the
    // retry of a timed-out attempt waits, which opens the very connections this test counts.
    const patient: RedlockOptions = { nodeTimeoutMs: 3_000 };
    const redlock = make(nodes(), patient);
    const other = make(nodes(), patient);
    // Earlier tests' channels linger a moment, and their UNSUBSCRIBE is not awaited: start from none.
    await until(async () => (await pubsubClients()) === 0, "earlier tests' subscriptions are gone");
    const before = await pubsubClients();
    const lock = await redlock.acquire(resource, 10_000);
    expect(await other.tryAcquire(resource, 10_000)).toBeNull(); // contended, but no retry: no wait
    await lock.release();
    await redlock.using(resource, 10_000, () => undefined);
    expect(redlock.notices.openConnections).toBe(0);
    expect(other.notices.openConnections).toBe(0);
    expect(await pubsubClients()).toBe(before);
  });

  it('unsubscribes from the channel once the last waiter is gone', async () => {
    const resource = uniqueResource('unsub');
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: NEVER_POLL });
    // A plain lock's waiter listens on its process' wake-up channel (it is woken by name) and on the
    // key's (releases of read-write locks and semaphores on the resource notify there).
    const channel = `${waiter.wakeQueue!.prefix}${waiter.wakeQueue!.id}`;
    const held = await holder.acquire(resource, 60_000);
    const waiting = waiter.acquire(resource, 60_000);
    // Awaited below; should the test fail first, its rejection at close() must not land in the next test.
    waiting.catch(() => undefined);
    await parked(waiter, 1, 1);
    // Armed once 2 of the 3 nodes confirmed (every quorum meets them); the third may confirm later.
    let seen: unknown[] = [];
    await until(async () => {
      const subscribed = await Promise.all(direct.map((c) => c.pubsub('NUMSUB', channel, lockKey(resource))));
      seen = subscribed;
      return subscribed.every((reply) => Number(reply[1]) === 1 && Number(reply[3]) === 1);
    }, 'both channels subscribed on every server').catch((err: unknown) => {
      // What each server and the notifier saw, for the failure's report.
      const acked = direct.map((_, node) => waiter.notices.subscribedOn(lockKey(resource), node));
      throw new Error(`${String(err)}; NUMSUB per server: ${JSON.stringify(seen)}; key channel confirmed per node: ${acked.join(', ')}`);
    });
    await held.release();
    await (await waiting).release();
    await waiter.notices.whenIdle();
    expect(waiter.notices.channelCount).toBe(0);
    // UNSUBSCRIBE is sent without awaiting its reply: the servers may need a moment.
    await until(async () => {
      const left = await Promise.all(direct.map((c) => c.pubsub('NUMSUB', channel, lockKey(resource))));
      return left.every((reply) => Number(reply[1]) === 0 && Number(reply[3]) === 0);
    }, 'the servers dropped the subscriptions');
  });

  it('wakes waiters of one process one at a time, oldest acquisition first', async () => {
    const resource = uniqueResource('fifo');
    const holder = make(nodes());
    // Without cohorting, each release goes to the nodes and wakes the next waiter by its notice.
    const waiters = make(nodes(), { retry: NEVER_POLL, cohort: false });
    const first = await holder.acquire(resource, 60_000);
    const order: string[] = [];
    const locks: Array<Promise<Lock>> = [];
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      locks.push(
        waiters.acquire(resource, 60_000).then((lock) => {
          order.push(name);
          return lock;
        }),
      );
      // The first waiter re-checks once under the newly armed subscription; the later ones attempt
      // nothing at all: their process is queued for the key already, so they wait for its turn.
      await parked(waiters, i + 1, 1);
    }
    await first.release();
    for (const pending of locks) await (await pending).release();
    expect(order).toEqual(['a', 'b', 'c']);
    // One wake-up per release: nobody was woken just to lose.
    expect(waiters.notices.stats.notice).toBe(3);
    expect(waiters.notices.stats.poll).toBe(0);
  });

  it('with cohorting, the first waiter woken by the notice takes the others along: they get the lock by hand-off, in order', async () => {
    const resource = uniqueResource('fifo-cohort');
    const holder = make(nodes());
    const waiters = make(nodes(), { retry: NEVER_POLL });
    const first = await holder.acquire(resource, 60_000);
    const order: string[] = [];
    const locks: Array<Promise<Lock>> = [];
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      locks.push(
        waiters.acquire(resource, 60_000).then((lock) => {
          order.push(name);
          return lock;
        }),
      );
      await parked(waiters, i + 1, 1);
    }
    await first.release();
    for (const pending of locks) await (await pending).release();
    expect(order).toEqual(['a', 'b', 'c']);
    // One notice (the other process's release); the two later waiters left their waits for the hand-off.
    expect(waiters.notices.stats.notice).toBe(1);
    expect(waiters.notices.stats.cohort).toBe(2);
    expect(waiters.notices.stats.poll).toBe(0);
  });

  it('falls back to polling when the lock expires without a release', async () => {
    const resource = uniqueResource('expire');
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: { retries: 1_000, delayMs: 20, jitterMs: 10 } });
    await holder.acquire(resource, 300); // never released: expires on the servers, no PUBLISH
    const lock = await waiter.acquire(resource, 10_000);
    expect(waiter.notices.stats.poll).toBeGreaterThan(0);
    expect(waiter.notices.stats.notice).toBe(0);
    await lock.release();
  });

  ioredisOnly('falls back to polling when no subscriber connection can be made', async () => {
    const resource = uniqueResource('nodup');
    // Clients passed in without duplicate(): the library cannot open subscribers for them.
    const clients = cluster.urls.map((url) => fastClient(url));
    await Promise.all(clients.map((c) => c.connect()));
    const bare = clients.map(
      (client) =>
        new Proxy(client, {
          get(target, prop) {
            if (prop === 'duplicate') return undefined;
            const value: unknown = Reflect.get(target, prop, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
    );
    try {
      const holder = make(nodes());
      const waiter = make(bare, { retry: { retries: 1_000, delayMs: 20, jitterMs: 10 } });
      const held = await holder.acquire(resource, 60_000);
      const waiting = waiter.acquire(resource, 60_000);
      await until(() => waiter.notices.stats.poll > 0, 'the waiter polled');
      await held.release();
      await (await waiting).release();
      expect(waiter.notices.openConnections).toBe(0);
      expect(waiter.notices.stats.notice).toBe(0);
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
  });

  it('re-subscribes after its subscriber connections are killed, and still wakes by notice', async () => {
    const resource = uniqueResource('killed');
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: NEVER_POLL });
    const held = await holder.acquire(resource, 60_000);
    const waiting = waiter.acquire(resource, 60_000);
    await parked(waiter, 1, 1);
    // All at once: a node reconnecting before another one dropped would re-arm twice.
    await Promise.all(direct.map((c) => c.call('CLIENT', 'KILL', 'TYPE', 'pubsub')));
    // Notices may have been lost while disconnected: re-arming wakes the waiter for one re-check.
    // On a busy machine one node may reconnect before another one's kill lands, which re-arms
    // twice (both re-checks are harmless): wait for every subscription to be back, not for a count.
    const key = lockKey(resource);
    await until(
      () =>
        waiter.notices.waiting === 1 &&
        waiter.notices.stats.armed >= 2 &&
        direct.every((_, node) => waiter.notices.subscribedOn(key, node)),
      'the waiter re-subscribed on every node and parked again',
    );
    await held.release();
    await (await waiting).release();
    expect(waiter.notices.stats.notice).toBe(1);
    expect(waiter.notices.stats.poll).toBe(0);
  });

  it('wakes by notice with a node down (a majority of subscriptions suffices)', async () => {
    const resource = uniqueResource('down');
    await cluster.server(2).kill();
    try {
      const holder = make(nodes());
      const waiter = make(nodes(), { retry: NEVER_POLL });
      const held = await holder.acquire(resource, 60_000);
      const waiting = waiter.acquire(resource, 60_000);
      await parked(waiter, 1, 1);
      await held.release();
      await (await waiting).release();
      expect(waiter.notices.stats.notice).toBe(1);
    } finally {
      await cluster.server(2).restart();
    }
  });

  it('wakes a waiter on several resources when one of them is released', async () => {
    const [a, b] = [uniqueResource('multi-a'), uniqueResource('multi-b')];
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: NEVER_POLL });
    const heldA = await holder.acquire(a, 60_000);
    const heldB = await holder.acquire(b, 60_000);
    const waiting = waiter.acquire([a, b], 60_000);
    await parked(waiter, 1, 1);
    await heldB.release(); // a is still held: the waiter wakes, fails, and parks again
    await until(() => waiter.notices.stats.notice === 1 && waiter.notices.waiting === 1, 'the waiter re-parked');
    await heldA.release();
    await (await waiting).release();
    expect(waiter.notices.stats.notice).toBe(2);
    expect(waiter.notices.stats.poll).toBe(0);
  });

  it('an aborted wait leaves the queue and its channel is dropped', async () => {
    const resource = uniqueResource('abort');
    const holder = make(nodes());
    const waiter = make(nodes(), { retry: NEVER_POLL });
    const held = await holder.acquire(resource, 60_000);
    const controller = new AbortController();
    const waiting = waiter.acquire(resource, 60_000, { signal: controller.signal });
    await parked(waiter, 1, 1);
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
    expect(waiter.notices.waiting).toBe(0);
    expect(waiter.notices.stats.aborted).toBe(1);
    await waiter.notices.whenIdle();
    expect(waiter.notices.channelCount).toBe(0);
    await held.release();
  });

  it('gives a read phase\u2019s notice to every reader between two attempts, not only to the first that looks', async () => {
    const batch = `${DEFAULT_PREFIX}rw-batch:${uniqueResource('read-phase')}`;
    const readers = make(nodes(), { retry: NEVER_POLL });
    // Three readers' acquisitions (a wait is keyed by its acquisition's keys array).
    const [a, b, c] = [[batch], [batch], [batch]];
    // A first wait returns once the subscription is armed: its attempt is then repeated under it.
    expect(await Promise.all([a, b, c].map((keys) => readers.notices.wait(keys, 600_000, undefined)))).toEqual(['armed', 'armed', 'armed']);
    // c waits; a and b are between two attempts (their replies not read yet) when a writer's release opens the read phase.
    const woken = readers.notices.wait(c, 600_000, undefined);
    await until(() => readers.notices.waiting === 1, 'c waits');
    await Promise.all(direct.map((node) => node.publish(batch, 'released')));
    expect(await woken).toBe('notice');
    // Both a and b see it when they wait next (their refused attempt ran before it). Bounded: a
    // wait that missed it returns 'poll' after 10 s instead of failing by the test's timeout.
    expect(await readers.notices.wait(a, 600_000, undefined, 10_000)).toBe('pending');
    expect(await readers.notices.wait(b, 600_000, undefined, 10_000)).toBe('pending');
    // Each takes it once: a's next wait (its next attempt ran after the notice) waits for a new one.
    expect(await readers.notices.wait(a, 1, undefined)).toBe('poll');
  });

  ioredisOnly('leaves no timers or sockets after close: a process that waited exits on its own', async () => {
    const dist = join(process.cwd(), 'packages/core/dist/index.js');
    expect(existsSync(join(process.cwd(), 'packages/core/dist/wakeups/release-notifier.js'))).toBe(true); // run `npm run build` first
    const script = `
      import { Redlock } from ${JSON.stringify(dist)};
      const urls = ${JSON.stringify(cluster.urls)};
      const holder = new Redlock(urls);
      class Probe extends Redlock { get notices() { return this.releaseNotices; } }
      const waiter = new Probe(urls, { retry: { retries: 50, delayMs: 600000, jitterMs: 0 } });
      const held = await holder.acquire('exit-check', 60000);
      const waiting = waiter.acquire('exit-check', 60000);
      // Park the waiter on the notice (there is no event for it; the state is polled).
      while (waiter.notices.waiting === 0 || waiter.notices.stats.armed === 0) await new Promise((r) => setTimeout(r, 5));
      await held.release();
      await (await waiting).release();
      await Promise.all([holder.close(), waiter.close()]);
      if (waiter.notices.stats.notice !== 1) throw new Error('not woken by the notice');
      console.log('closed');
    `;
    const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    // If anything kept the event loop alive, the child never exits and the test times out.
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(out.trim()).toBe('closed');
    expect(code).toBe(0);
  });
});
