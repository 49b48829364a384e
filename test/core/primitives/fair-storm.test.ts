/**
 * A storm of fair waiters on one key: 2,000 in this process and 2 × 50 in other processes,
 * queued behind a holder. When it releases, every waiter gets the lock, one at a time, in
 * queue order (ticket order, within each process and across them), for a bounded number of
 * Redis commands per waiter, and the queue is empty on every node afterwards. Child processes
 * load the built package: run `npm run build` first.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import { DEFAULT_PREFIX, uniqueResource, until, useFixture } from '../helpers.js';
import { runScript } from '../../harness/child-script.js';

const DIST = join(process.cwd(), 'packages/core/dist/index.js');

/**
 * The waiters' liveness lease (`fairWaiterTtlMs`, default 2 s). A process that renews none for
 * that long counts as dead, and the others' polls drop its waiters' places: right for a crashed
 * process (fair-lock.test.ts), but this process runs 2,000 waiters on a machine that may be
 * busy, and a long enough stall of its event loop would take their places in the middle of the
 * storm: the likeliest cause of the one cross-process order break a loaded clean-clone run saw
 * (not reproduced alone: 10 runs beside two busy processes, timers up to 0.5 s late). With the
 * lease out of reach of a stall, this test checks the queue's order alone.
 */
const WAITER_TTL_MS = 60_000;

/** One critical section: when it ran (epoch ms, comparable across processes) and the ticket it was granted with. */
type Section = [start: number, end: number, ticket: number];

/** The tickets of `sections` in the order they ran. */
function ticketsInOrder(sections: readonly Section[]): number[] {
  return [...sections].sort((a, b) => a[0] - b[0]).map((s) => s[2]);
}

function nonDecreasing(values: readonly number[]): boolean {
  return values.every((v, i) => i === 0 || v >= values[i - 1]!);
}

describe('a storm of fair waiters on one key (3 nodes)', () => {
  const fx = useFixture(3);

  /** Every command the nodes have run so far, by name (scripts count once, and so does each command they run). */
  async function commands(): Promise<Map<string, number>> {
    const calls = new Map<string, number>();
    for (let i = 0; i < fx.urls.length; i++) {
      const info = await fx.node(i).info('commandstats');
      for (const [, name, n] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(name!, (calls.get(name!) ?? 0) + Number(n));
    }
    return calls;
  }

  const total = (calls: Map<string, number>): number => [...calls.values()].reduce((a, b) => a + b, 0);

  it('hands the key to 2,000 local and 2 × 50 other waiters one at a time, in queue order, and leaves no queue behind', async () => {
    expect(existsSync(DIST)).toBe(true); // run `npm run build` first
    const resource = uniqueResource('fair-storm');
    const queueKey = `${DEFAULT_PREFIX}fair-queue:${resource}`;
    const gate = fx.redlock({ fairWaiterTtlMs: WAITER_TTL_MS });
    const held = await gate.acquire(resource, 120_000, { fair: true });
    const before = await commands();

    const OTHERS = 2;
    const PER_OTHER = 50;
    const LOCAL = 2_000;
    const childScript = `
      import { Redlock } from ${JSON.stringify(DIST)};
      const redlock = new Redlock(${JSON.stringify(fx.urls)}, { onWarning: () => {}, fairWaiterTtlMs: ${WAITER_TTL_MS} });
      const now = () => performance.timeOrigin + performance.now();
      const sections = [];
      const errors = [];
      const waits = Array.from({ length: ${PER_OTHER} }, () =>
        redlock.using(${JSON.stringify(resource)}, 10000, async (lock) => {
          const start = now();
          await new Promise((r) => setImmediate(r));
          sections.push([start, now(), redlock.fair.ticketOf(lock)]);
        }, { fair: true, timeoutMs: 240000, retry: { retries: Infinity, delayMs: 60000, jitterMs: 0 } }).catch((e) => errors.push(e.name + ': ' + e.message)));
      console.log('waiting');
      await Promise.all(waits);
      await redlock.close();
      console.log(JSON.stringify({ sections, errors }));
    `;
    let waitingChildren = 0;
    const children = Array.from({ length: OTHERS }, () => runScript(childScript, (line) => line === 'waiting' && waitingChildren++));
    try {
      await until(() => waitingChildren === OTHERS, 'the other processes wait', 60_000);

      // How late this process' timers ran (its lease beats among them), shown if the order breaks.
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const redlock = new Redlock(fx.urls, { onWarning: () => undefined, fairWaiterTtlMs: WAITER_TTL_MS });
      const now = (): number => performance.timeOrigin + performance.now();
      const local: Section[] = [];
      let inside = 0;
      let overlapped = 0;
      const waits = Array.from({ length: LOCAL }, () =>
        redlock
          .using(
            resource,
            10_000,
            async (lock) => {
              if (++inside > 1) overlapped++;
              const start = now();
              await new Promise((r) => setImmediate(r));
              local.push([start, now(), redlock.fair.ticketOf(lock)!]);
              inside--;
            },
            // Fallback polls far apart: every hand-off must come by notice, and the commands
            // counted are the queue's own, not polls whose number grows with how long the storm
            // takes on a loaded machine.
            { fair: true, timeoutMs: 240_000, retry: { retries: Infinity, delayMs: 60_000, jitterMs: 0 } },
          )
          .then(
            () => undefined,
            (err: unknown) => err,
          ),
      );
      // Everyone queued on every node, behind the holder.
      const everyone = LOCAL + OTHERS * PER_OTHER;
      await until(
        async () => (await Promise.all(fx.urls.map((_, i) => fx.node(i).zcard(queueKey)))).every((n) => n === everyone),
        'every waiter is queued on every node',
        120_000,
      );
      await held.release();

      const localErrors = (await Promise.all(waits)).filter((e) => e !== undefined);
      const reports = await Promise.all(children.map((c) => c.done));
      await redlock.close();
      expect(localErrors).toEqual([]);
      expect(overlapped).toBe(0);
      expect(local.length).toBe(LOCAL);
      const all: Section[] = [...local];
      for (const { code, lines } of reports) {
        expect(code).toBe(0);
        const report = JSON.parse(lines[lines.length - 1]!) as { sections: Section[]; errors: string[] };
        expect(report.errors).toEqual([]);
        expect(report.sections.length).toBe(PER_OTHER);
        // FIFO within the other process: its waiters ran in queue (ticket) order.
        expect(nonDecreasing(ticketsInOrder(report.sections))).toBe(true);
        all.push(...report.sections);
      }
      // One at a time across the processes, and in queue order across them too.
      all.sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < all.length; i++) expect(all[i]![0]).toBeGreaterThanOrEqual(all[i - 1]![1]);
      expect(nonDecreasing(ticketsInOrder(local))).toBe(true);
      lag.disable();
      const outOfOrder = all.flatMap((s, i) =>
        i > 0 && s[2] < all[i - 1]![2] ? [{ after: all[i - 1]![2], ticket: s[2], local: local.includes(s) }] : [],
      );
      expect({ outOfOrder: outOfOrder.slice(0, 10), loopLagMaxMs: lag.max / 1e6 }).toEqual({ outOfOrder: [], loopLagMaxMs: lag.max / 1e6 });
      expect(all.every((s) => s[2] > 0)).toBe(true); // each one waited in the queue

      // Bounded cost: the queue moves by notices, so a waiter costs a handful of commands per node
      // (arrive, agree on a ticket, take, release, leave), not a poll per hand-off.
      const after = await commands();
      const perWaiter = (total(after) - total(before)) / everyone;
      if (perWaiter >= 20 * fx.urls.length) {
        // Which commands grew says why (1 run in 10 under test:stress went to ~64 per waiter).
        const grew = [...after].map(([name, n]) => `${name} ${((n - (before.get(name) ?? 0)) / everyone).toFixed(1)}`);
        throw new Error(`${perWaiter.toFixed(1)} commands per waiter (per waiter, by command: ${grew.join(', ')})`);
      }
      expect(perWaiter).toBeLessThan(20 * fx.urls.length); // about 13 per node measured
      // Nothing of the storm is left in the queue or on the lock key.
      for (let i = 0; i < fx.urls.length; i++) {
        expect(await fx.node(i).zcard(queueKey)).toBe(0);
        expect(await fx.node(i).exists(`${DEFAULT_PREFIX}lock:${resource}`)).toBe(0);
      }
    } finally {
      for (const c of children) c.child.kill();
    }
  }, 300_000);
});
