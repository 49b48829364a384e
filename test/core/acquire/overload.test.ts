/**
 * Overload is not an outage: with healthy nodes, a client that is merely busy (a burst
 * of acquisitions in one tick, a storm of waiters on one key, a cold process on a
 * CPU-starved machine) never reports QuorumUnavailableError. Child processes load the
 * built package: run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import type { ReleaseNotifier } from '../../../packages/core/src/wakeups/release-notifier.js';
import { useFixture, uniqueResource, until } from '../helpers.js';
import { runScript } from '../../harness/child-script.js';

const DIST = join(process.cwd(), 'packages/core/dist/index.js');

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

/** Names of failures, counted: `{ QuorumUnavailableError: 3 }`. */
function tally(errors: unknown[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of errors) {
    const name = e instanceof Error ? e.name : String(e);
    out[name] = (out[name] ?? 0) + 1;
  }
  return out;
}

describe('overload is never reported as an outage (5 healthy nodes)', () => {
  const fx = useFixture(5);

  /** Lock commands (SET, PTTL, scripts) the nodes have run so far, summed. */
  async function lockCommands(): Promise<number> {
    let calls = 0;
    for (let i = 0; i < fx.urls.length; i++) {
      const info = await fx.node(i).info('commandstats');
      for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval|set|pttl):calls=(\d+)/gm)) calls += Number(match[1]);
    }
    return calls;
  }

  it('grants all 10,000 acquisitions of distinct keys issued in one tick (default options)', async () => {
    const redlock = fx.redlock();
    const prefix = uniqueResource('burst');
    const results = await Promise.allSettled(Array.from({ length: 10_000 }, (_, i) => redlock.acquire(`${prefix}:${i}`, 30_000)));
    const locks = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(tally(errors)).toEqual({});
    expect(locks.length).toBe(10_000);
    await Promise.all(locks.map((lock) => lock.release()));
  }, 300_000); // a bound, not a speed claim: the grant of all 10,000 is what is asserted

  it('hands one key to 2,000 waiters of one process plus 2 × 50 in other processes, one at a time, with bounded commands per waiter', async () => {
    expect(existsSync(DIST)).toBe(true); // run `npm run build` first
    const resource = uniqueResource('storm');
    const gate = fx.redlock();
    const held = await gate.acquire(resource, 60_000);
    const before = await lockCommands();

    const OTHERS = 2;
    const PER_OTHER = 50;
    const LOCAL = 2_000;
    const childScript = `
      import { Redlock } from ${JSON.stringify(DIST)};
      const redlock = new Redlock(${JSON.stringify(fx.urls)}, { onWarning: () => {} });
      const now = () => performance.timeOrigin + performance.now();
      const intervals = [];
      const errors = [];
      const waits = Array.from({ length: ${PER_OTHER} }, () =>
        redlock.using(${JSON.stringify(resource)}, 10000, async () => {
          const start = now();
          await new Promise((r) => setImmediate(r));
          intervals.push([start, now()]);
        }, { timeoutMs: 240000 }).catch((e) => errors.push(e.name + ': ' + e.message)));
      console.log('waiting');
      await Promise.all(waits);
      await redlock.close();
      console.log(JSON.stringify({ intervals, errors }));
    `;
    let waitingChildren = 0;
    const children = Array.from({ length: OTHERS }, () => runScript(childScript, (line) => line === 'waiting' && waitingChildren++));
    try {
      await until(() => waitingChildren === OTHERS, 'the other processes wait', 60_000);

      const redlock = new ProbedRedlock(fx.urls, { onWarning: () => undefined });
      const now = (): number => performance.timeOrigin + performance.now();
      const intervals: Array<[number, number]> = [];
      let inside = 0;
      let overlapped = 0;
      const local = Array.from({ length: LOCAL }, () =>
        redlock
          .using(
            resource,
            10_000,
            async () => {
              if (++inside > 1) overlapped++;
              const start = now();
              await new Promise((r) => setImmediate(r));
              intervals.push([start, now()]);
              inside--;
            },
            { timeoutMs: 240_000 },
          )
          .then(
            () => undefined,
            (err: unknown) => err,
          ),
      );
      await until(() => redlock.notices.waiting >= LOCAL - 10, 'the local waiters park', 60_000);
      await held.release();

      const localErrors = (await Promise.all(local)).filter((e) => e !== undefined);
      const reports = await Promise.all(children.map((c) => c.done));
      const childErrors: string[] = [];
      for (const { code, lines } of reports) {
        expect(code).toBe(0);
        const report = JSON.parse(lines[lines.length - 1]!) as { intervals: Array<[number, number]>; errors: string[] };
        intervals.push(...report.intervals);
        childErrors.push(...report.errors);
      }
      expect(tally(localErrors)).toEqual({});
      expect(childErrors).toEqual([]);
      expect(overlapped).toBe(0);
      expect(intervals.length).toBe(LOCAL + OTHERS * PER_OTHER);
      intervals.sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0]).toBeGreaterThanOrEqual(intervals[i - 1]![1]);

      // Waiters that release notices cover do not poll at full rate: a handful of attempts
      // each (an attempt is at most 2 commands per node, plus the release).
      const perWaiter = ((await lockCommands()) - before) / (LOCAL + OTHERS * PER_OTHER);
      expect(perWaiter).toBeLessThan(20 * fx.urls.length);
      // Nothing is left waiting; the queue's memory is gone with its waiters.
      expect(redlock.notices.waiting).toBe(0);
      await redlock.close();
    } finally {
      for (const c of children) c.child.kill();
    }
  }, 300_000);

  it('cold processes on a CPU-starved machine take their first lock (200 ms TTL) without QuorumUnavailableError', async () => {
    expect(existsSync(DIST)).toBe(true); // run `npm run build` first
    const hogs = Array.from({ length: 2 }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    try {
      const runs = Array.from(
        { length: 4 },
        (_, i) =>
          runScript(`
          import { Redlock } from ${JSON.stringify(DIST)};
          const redlock = new Redlock(${JSON.stringify(fx.urls)}, { onWarning: () => {} });
          try {
            await redlock.using(${JSON.stringify(uniqueResource(`cold-${i}`))}, 200, () => undefined);
            console.log('ok');
          } catch (err) {
            console.log(err.name + ': ' + err.message);
          }
          await redlock.close();
        `).done,
      );
      const outcomes = (await Promise.all(runs)).map((r) => r.lines.join(' | '));
      expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok']);
    } finally {
      for (const hog of hogs) hog.kill();
    }
  }, 120_000);
});
