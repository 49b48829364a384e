/**
 * Overload is not an outage, for every primitive: 10,000 calls issued in one tick on one
 * resource of 3 healthy nodes resolve to a lock or `null` (or LockNotAcquiredError for
 * acquire), never QuorumUnavailableError, and never grant more holders than the primitive
 * allows. The counter-cases check that this did not just hide timeouts: with a majority
 * of the nodes stopped (SIGSTOP) before or during the burst, the calls still end, with
 * QuorumUnavailableError, while the nodes stay stopped.
 *
 * The burst shows the fault a round's follow-up command had (the slot scan after a refused
 * `SET NX`, the PTTL after a refused plain acquire): it waited behind the burst's other
 * commands in our own backlog while the node's timeout clock ran from the first command. A
 * long tick showed another: commands were handed to the client (arming its own command
 * timeout) when issued, not when the tick's batch was written.
 */
import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, QuorumUnavailableError, type AcquireOptions, type Lock, type Redlock } from '@redlock-nest/core';
import { failFastOptions } from '@redlock-nest/core/internal';
import { Redis } from 'ioredis';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { uniqueResource, until, useFixture } from '../helpers.js';

const BURST = 10_000;
const TTL = 30_000;

/** Names of failures, counted: `{ QuorumUnavailableError: 3 }`. */
function tally(errors: readonly unknown[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of errors) {
    const name = e instanceof Error ? e.name : String(e);
    out[name] = (out[name] ?? 0) + 1;
  }
  return out;
}

/**
 * Errors other than LockNotAcquiredError, counted by what each node answered, so a failure
 * says why: `{ 'QuorumUnavailableError: timeout (no answer within 500 ms) | ok | timeout (…)': 3 }`.
 */
function unexpected(errors: readonly unknown[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of errors) {
    if (e instanceof LockNotAcquiredError) continue;
    const nodes =
      e instanceof QuorumUnavailableError ? e.nodes.map((n) => (n.error ? `${n.status} (${n.error})` : n.status)).join(' | ') : String(e);
    const key = `${e instanceof Error ? e.name : 'thrown'}: ${nodes}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** The settled results of a burst, split. */
function split(results: ReadonlyArray<PromiseSettledResult<Lock | null>>): { locks: Lock[]; nulls: number; errors: unknown[] } {
  const locks: Lock[] = [];
  const errors: unknown[] = [];
  let nulls = 0;
  for (const r of results) {
    if (r.status === 'rejected') errors.push(r.reason);
    else if (r.value) locks.push(r.value);
    else nulls++;
  }
  return { locks, nulls, errors };
}

/** 100 calls issued at once on 10 keys, plain locks and 5-permit semaphores in turn. */
function mixedBurst(redlock: Redlock, resource: string): Array<Promise<Lock | null>> {
  return Array.from({ length: 100 }, (_, i) => redlock.tryAcquire(`${resource}:${i % 10}`, TTL, i % 2 ? { permits: 5 } : {}));
}

/** Blocks this process for `ms`: what a long GC pause or a starved CPU does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** The calls end in locks or nulls (at least one lock per key), never in an outage; the locks are released. */
async function expectContention(calls: ReadonlyArray<Promise<Lock | null>>): Promise<void> {
  const { locks, errors } = split(await Promise.allSettled(calls));
  expect(unexpected(errors)).toEqual({});
  expect(locks.length).toBeGreaterThanOrEqual(10);
  await Promise.all(locks.map((lock) => lock.release()));
}

describe('a burst on one resource is contention, not an outage, for every primitive (3 healthy nodes)', () => {
  const fx = useFixture(3);

  // [what, options, most holders at once]
  const shapes: Array<[string, AcquireOptions, number]> = [
    ['semaphore tryAcquire (5 permits)', { permits: 5 }, 5],
    ['read tryAcquire', { mode: 'read' }, BURST],
    ['write tryAcquire', { mode: 'write' }, 1],
    ['fair tryAcquire', { fair: true }, 1],
    ['plain tryAcquire on one key', {}, 1],
  ];

  it.each(shapes)(
    '%s: 10,000 calls in one tick resolve to a lock or null',
    async (_what, options, most) => {
      const redlock = fx.redlock();
      const resource = uniqueResource('burst');
      const results = await Promise.allSettled(Array.from({ length: BURST }, () => redlock.tryAcquire(resource, TTL, options)));
      const { locks, nulls, errors } = split(results);
      expect(unexpected(errors)).toEqual({});
      // No lock is released during the burst: every grant is held at once.
      expect(locks.length).toBeGreaterThanOrEqual(1);
      expect(locks.length).toBeLessThanOrEqual(most);
      expect(locks.length + nulls).toBe(BURST);
      await Promise.all(locks.map((lock) => lock.release()));
    },
    120_000, // a bound, not a speed claim
  );

  it('semaphore acquire with a timeoutMs: 10,000 waiters get a permit or LockNotAcquiredError, at most 5 inside at once', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('burst-wait');
    let inside = 0;
    let most = 0;
    let sections = 0;
    const results = await Promise.allSettled(
      Array.from({ length: BURST }, () =>
        redlock.using(
          resource,
          TTL,
          async () => {
            most = Math.max(most, ++inside);
            sections++;
            await new Promise((r) => setImmediate(r));
            inside--;
          },
          { permits: 5, timeoutMs: 2_000 },
        ),
      ),
    );
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(unexpected(errors)).toEqual({});
    expect(errors.every((e) => e instanceof LockNotAcquiredError)).toBe(true);
    expect(sections).toBeGreaterThanOrEqual(5);
    expect(sections + errors.length).toBe(BURST);
    expect(most).toBeLessThanOrEqual(5);
  }, 120_000);

  it("a tick longer than the clients' own command timeout (calls issued, then the event loop blocked) is not an outage", async () => {
    // Clients passed in with a short command timeout of their own (the library's own clients have a late one, see the next case).
    const clients = [0, 1, 2].map((i) => new Redis(fx.urls[i]!, { ...failFastOptions(500), commandTimeout: 500 }));
    try {
      const redlock = fx.redlock({}, clients);
      const resource = uniqueResource('long-tick');
      // Connected first: a command waiting for the connection is handed over once it is up.
      expect(await redlock.tryAcquire(uniqueResource('warm'), TTL)).not.toBeNull();
      const calls = mixedBurst(redlock, resource);
      // A busy process: its tick runs past the client's command timeout before anything is written.
      stall(1_000);
      await expectContention(calls);
    } finally {
      clients.forEach((c) => c.disconnect());
    }
  }, 60_000);

  it('a stall of this process after the commands were written, with the replies arriving meanwhile, is not an outage', async () => {
    // What a long GC pause or a starved CPU does in the middle of a burst. The client's own
    // command timer fires before the poll phase reads the replies: it must not be the judge.
    const redlock = fx.redlock();
    const resource = uniqueResource('stall');
    expect(await redlock.tryAcquire(uniqueResource('warm'), TTL)).not.toBeNull();
    // Stopped nodes: nothing can be answered (and read) before the stall begins.
    for (const i of [0, 1, 2]) fx.cluster.server(i).pause();
    const calls = mixedBurst(redlock, resource);
    // The commands were written at the end of that tick; the nodes answer while this process stalls for 3 node timeouts.
    setImmediate(() => {
      fx.resumeAll();
      stall(1_500);
    });
    await expectContention(calls);
  }, 60_000);

  it('a reply that came while this process stalled after the node timeout fell due is read before the node is declared timed out', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300 });
    expect(await redlock.tryAcquire(uniqueResource('warm'), TTL)).not.toBeNull();
    // A socket pair of the test's own, whose callback runs in the poll phase that follows the round's timer.
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const peer = connect((server.address() as AddressInfo).port, '127.0.0.1');
    const [accepted] = (await once(server, 'connection')) as [Socket];
    try {
      fx.cluster.server(1).pause();
      fx.cluster.server(2).pause();
      const call = redlock.tryAcquire(uniqueResource('poll-stall'), TTL);
      // Armed after the round's 300 ms timer, with the same delay: it fires right after it, in the same timers phase.
      setTimeout(() => peer.write('x'), 300);
      accepted.once('data', () => {
        // In the poll phase, after it collected what had arrived: the nodes answer while this callback runs.
        fx.resumeAll();
        stall(300);
      });
      const lock = await call;
      expect(lock).not.toBeNull();
      await lock!.release();
    } finally {
      peer.destroy();
      accepted.destroy();
      server.close();
    }
  });

  describe.each<[string, AcquireOptions]>([
    ['semaphore', { permits: 5 }],
    ['plain lock', {}],
  ])('with 2 of 3 nodes stopped (%s)', (_what, options) => {
    it('before the burst: every call reports QuorumUnavailableError, without the nodes resuming', async () => {
      const redlock = fx.redlock();
      const resource = uniqueResource('burst-down');
      // Connected first: the stop must look like a node that stopped answering, not one never reached.
      // With retries: the test before this one resumed its paused nodes, whose replies to its burst
      // can keep this process busy past a connect timeout (ioredis' timer, read before the socket's
      // 'connect'); that attempt fails as timed out, the client reconnects, and the next one locks.
      await redlock.acquire(uniqueResource('warm'), TTL, { ...options, timeoutMs: 30_000 });
      fx.cluster.server(1).pause();
      fx.cluster.server(2).pause();
      const results = await Promise.allSettled(Array.from({ length: BURST }, () => redlock.tryAcquire(resource, TTL, options)));
      const { locks, nulls, errors } = split(results);
      expect(locks.length + nulls).toBe(0);
      expect(tally(errors)).toEqual({ QuorumUnavailableError: BURST });
      fx.resumeAll();
    }, 120_000);
  });

  it('during the burst (semaphore): the calls still under way end with QuorumUnavailableError, without the nodes resuming', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('burst-stop');
    let ended = 0;
    const calls = Array.from({ length: BURST }, () =>
      redlock.tryAcquire(resource, TTL, { permits: 5 }).finally(() => {
        ended++;
      }),
    );
    // The first calls are answered (the 5 grants and the first refusals have been through a
    // follow-up scan): stop a majority while the rest are in the nodes' pipelines or our backlog.
    await until(() => ended > 0, 'the first calls end', 60_000);
    fx.cluster.server(1).pause();
    fx.cluster.server(2).pause();
    const { locks, errors } = split(await Promise.allSettled(calls));
    const names = tally(errors);
    expect(Object.keys(names)).toEqual(['QuorumUnavailableError']);
    expect(errors.every((e) => e instanceof QuorumUnavailableError)).toBe(true);
    expect(locks.length).toBeLessThanOrEqual(5);
    fx.resumeAll();
  }, 120_000);
});
