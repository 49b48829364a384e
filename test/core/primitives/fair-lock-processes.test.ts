/**
 * Fair locks across real processes: each waiter is a child process (its own Redlock,
 * notice channel and liveness key), queued one after the other while the test holds the
 * lock. Grants are numbered by a counter on node 0, and each child checks that nobody
 * else is inside while it holds the lock. Needs `npm run build` (children load the built core).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { CHILD_GUARD_ARGS } from '../../harness/child-process-guard.js';
import { uniqueResource, until, useFixture } from '../helpers.js';

const ENTRY = join(process.cwd(), 'packages/core/dist/index.js');
const WAITER = fileURLToPath(new URL('../fixtures/fair-waiter.mjs', import.meta.url));
/**
 * The waiters' liveness TTL where a stopped or killed waiter must lose its place. A live waiter
 * renews it every third of it: at 400 ms, a waiter starved of CPU for ~270 ms (a busy core) lost
 * its place too, and was granted out of order. Long enough that only a stopped process misses it.
 */
const LIVENESS_TTL_MS = 2_000;

interface Waiter {
  readonly name: string;
  readonly child: ChildProcess;
  /** Every line it printed. */
  readonly lines: string[];
  readonly exited: Promise<number | null>;
  /** Resolves once it is queued (its first attempt found the lock held and took a ticket). */
  readonly waiting: Promise<void>;
}

describe('fair lock across processes', () => {
  const fx = useFixture(3);

  function spawnWaiter(resource: string, name: string, waiterTtlMs: number): Waiter {
    const child = spawn(
      process.execPath,
      [...CHILD_GUARD_ARGS, WAITER, ENTRY, JSON.stringify(fx.urls), resource, name, String(waiterTtlMs)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines: string[] = [];
    let queuedNow!: () => void;
    const waiting = new Promise<void>((resolve) => (queuedNow = resolve));
    // Whole lines only: a chunk may end inside one.
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop()!;
      const fresh = parts.filter(Boolean);
      lines.push(...fresh);
      if (fresh.includes('waiting')) queuedNow();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { name, child, lines, exited, waiting };
  }

  async function queued(resource: string, count: number): Promise<void> {
    await until(
      async () => (await Promise.all([0, 1, 2].map((i) => fx.node(i).zcard(`redlock:fair-queue:${resource}`)))).every((n) => n === count),
      `${count} waiter(s) queued`,
    );
  }

  /** Names in the order they were granted the lock. */
  async function grants(resource: string, waiters: readonly Waiter[]): Promise<string[]> {
    const all = waiters.flatMap((w) => w.lines);
    expect(all.filter((l) => l.startsWith('overlap'))).toEqual([]);
    const granted = all.filter((l) => l.startsWith('acquired')).map((l) => l.split(' '));
    expect(await fx.node(0).get(`grants:${resource}`)).toBe(String(granted.length));
    return granted.sort((a, b) => Number(a[2]) - Number(b[2])).map((g) => g[1]!);
  }

  it('needs the built core', () => {
    expect(existsSync(ENTRY)).toBe(true); // run `npm run build` first
  });

  it('grants in order of arrival across processes', async () => {
    const resource = uniqueResource('procs');
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 60_000, { fair: true }); // outlasts the waiters' start-up
    const waiters: Waiter[] = [];
    for (const name of ['a', 'b', 'c', 'd']) {
      const waiter = spawnWaiter(resource, name, 2_000);
      waiters.push(waiter);
      // Its own word that it is queued, not the queues' length on every node: a ticket needs a
      // majority, and a starting process under load can take longer than any fixed bound.
      await waiter.waiting;
    }
    await held.release();
    expect(await Promise.all(waiters.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
    expect(await grants(resource, waiters)).toEqual(['a', 'b', 'c', 'd']);
  }, 120_000);

  it('skips a paused waiter after its liveness TTL; it still gets the lock once it resumes', async () => {
    const resource = uniqueResource('paused');
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 60_000, { fair: true }); // outlasts the waiters' start-up
    const waiters: Waiter[] = [];
    for (const name of ['a', 'b', 'c', 'd']) {
      const waiter = spawnWaiter(resource, name, LIVENESS_TTL_MS);
      waiters.push(waiter);
      await waiter.waiting;
    }
    const [a, b, c, d] = waiters as [Waiter, Waiter, Waiter, Waiter];
    b.child.kill('SIGSTOP');
    await held.release();
    // a, then (b's liveness key expired) c and d: b is dropped from every queue meanwhile.
    await Promise.all([a.exited, c.exited, d.exited]);
    b.child.kill('SIGCONT');
    expect(await b.exited).toBe(0);
    expect(await grants(resource, waiters)).toEqual(['a', 'c', 'd', 'b']);
  }, 120_000);

  it('skips a killed waiter', async () => {
    const resource = uniqueResource('killed');
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 60_000, { fair: true }); // outlasts the waiters' start-up
    const waiters: Waiter[] = [];
    for (const name of ['a', 'b', 'c']) {
      const waiter = spawnWaiter(resource, name, LIVENESS_TTL_MS);
      waiters.push(waiter);
      await waiter.waiting;
    }
    const [a, b, c] = waiters as [Waiter, Waiter, Waiter];
    b.child.kill('SIGKILL');
    await b.exited;
    await held.release();
    expect(await Promise.all([a.exited, c.exited])).toEqual([0, 0]);
    expect(await grants(resource, waiters)).toEqual(['a', 'c']);
    await queued(resource, 0);
  }, 120_000);
});
