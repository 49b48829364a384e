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
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { uniqueResource, until, useFixture } from './helpers.js';

const ENTRY = join(process.cwd(), 'packages/core/dist/index.js');
const WAITER = fileURLToPath(new URL('./fixtures/fair-waiter.mjs', import.meta.url));

interface Waiter {
  readonly name: string;
  readonly child: ChildProcess;
  /** Every line it printed. */
  readonly lines: string[];
  readonly exited: Promise<number | null>;
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
    child.stdout.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { name, child, lines, exited };
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
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters: Waiter[] = [];
    for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) {
      waiters.push(spawnWaiter(resource, name, 2_000));
      await queued(resource, i + 1);
    }
    await held.release();
    expect(await Promise.all(waiters.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
    expect(await grants(resource, waiters)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('skips a paused waiter after its liveness TTL; it still gets the lock once it resumes', async () => {
    const resource = uniqueResource('paused');
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters: Waiter[] = [];
    for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) {
      waiters.push(spawnWaiter(resource, name, 400));
      await queued(resource, i + 1);
    }
    const [a, b, c, d] = waiters as [Waiter, Waiter, Waiter, Waiter];
    b.child.kill('SIGSTOP');
    await held.release();
    // a, then (b's liveness key expired) c and d: b is dropped from every queue meanwhile.
    await Promise.all([a.exited, c.exited, d.exited]);
    b.child.kill('SIGCONT');
    expect(await b.exited).toBe(0);
    expect(await grants(resource, waiters)).toEqual(['a', 'c', 'd', 'b']);
  });

  it('skips a killed waiter', async () => {
    const resource = uniqueResource('killed');
    const holder = fx.redlock();
    const held = await holder.acquire(resource, 10_000, { fair: true });
    const waiters: Waiter[] = [];
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      waiters.push(spawnWaiter(resource, name, 400));
      await queued(resource, i + 1);
    }
    const [a, b, c] = waiters as [Waiter, Waiter, Waiter];
    b.child.kill('SIGKILL');
    await b.exited;
    await held.release();
    expect(await Promise.all([a.exited, c.exited])).toEqual([0, 0]);
    expect(await grants(resource, waiters)).toEqual(['a', 'c']);
    await queued(resource, 0);
  });
});
