/**
 * Read-write locks across real processes, phase-fair: 3 processes × (3 readers, 1 writer, 1 plain
 * lock) on one resource over 5 lock nodes, healthy and with 2 of them paused (SIGSTOP). A sixth
 * redis-server (not a lock node) records every start, wait, grant and leave in one global order;
 * the claims are checked on that order (rw-phases.ts), and the run ends once readers and writers
 * got in a number of times after the fault: a side that starves never gets there, and the test times out.
 * Also: a waiter killed with SIGKILL blocks the others no longer than its lease.
 * Needs `npm run build` (children load the built core).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { CHILD_GUARD_ARGS } from '../../harness/child-process-guard.js';
import { DEFAULT_PREFIX, lockKey as lockKeyOf, uniqueResource, until, useFixture } from '../helpers.js';
import { exclusionViolations, grants, mostReadsPastAWaitingWriter, parseLog, type Kind, type LogEvent } from './rw-phases.js';

const ENTRY = join(process.cwd(), 'packages/core/dist/index.js');
const WORKER = fileURLToPath(new URL('../fixtures/rw-worker.mjs', import.meta.url));
const LOCK_NODES = 5;
const OBSERVER = LOCK_NODES;
const batch = (resource: string): string => `${DEFAULT_PREFIX}rw-batch:${resource}`;
const queued = (resource: string): string => `${DEFAULT_PREFIX}rw-queued:${resource}`;
const writers = (resource: string): string => `${DEFAULT_PREFIX}rw-writers:${resource}`;

/** The mixed workload of each process (fixtures/rw-worker.mjs). */
const MIXED = {
  readers: 3,
  writers: 1,
  plain: 1,
  ttlMs: 5_000,
  // A bound no acquisition reaches unless a side starves: the failure then names it.
  timeoutMs: 30_000,
  nodeTimeoutMs: 100,
  delayMs: 50,
  jitterMs: 50,
  timing: { read: { holdMs: 15, pauseMs: 5 }, write: { holdMs: 5, pauseMs: 10 }, plain: { holdMs: 5, pauseMs: 20 } },
};

interface Child {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

describe('read-write lock across processes (phase-fair)', () => {
  const fx = useFixture(LOCK_NODES + 1);
  const lockUrls = (): string[] => fx.urls.slice(0, LOCK_NODES);

  function spawnWorker(resource: string, name: string, config: object): Child {
    const args = [
      ...CHILD_GUARD_ARGS,
      WORKER,
      ENTRY,
      JSON.stringify(lockUrls()),
      fx.urls[OBSERVER]!,
      resource,
      name,
      JSON.stringify(config),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { child, lines, exited };
  }

  /** Waits until the ZSET `key` has `count` members on every lock node. */
  async function onEveryNode(key: string, count: number, what: string): Promise<void> {
    const nodes = Array.from({ length: LOCK_NODES }, (_, i) => i);
    await until(async () => (await Promise.all(nodes.map((i) => fx.node(i).zcard(key)))).every((n) => n === count), what);
  }

  async function log(resource: string): Promise<LogEvent[]> {
    return parseLog(await fx.node(OBSERVER).lrange(`log:${resource}`, 0, -1));
  }

  it('needs the built core', () => {
    expect(existsSync(ENTRY)).toBe(true); // run `npm run build` first
  });

  describe.each<[string, readonly number[]]>([
    ['healthy', []],
    ['2 of 5 paused', [3, 4]],
  ])('3 processes × (3 readers, 1 writer, 1 plain lock), nodes %s', (_label, paused) => {
    it('lets readers and writers in by turns: no reader loop streams past a waiting writer, every acquisition gets in', async () => {
      const resource = uniqueResource('rw-mixed');
      const children = ['a', 'b', 'c'].map((name) => spawnWorker(resource, name, MIXED));
      const everyKind = async (n: number, since: Record<Kind, number>): Promise<boolean> => {
        const g = grants(await log(resource));
        return g.read - since.read >= n && g.write - since.write >= n;
      };
      const none = { read: 0, write: 0, plain: 0 };
      await until(() => everyKind(3, none), 'readers and writers got in', 20_000);
      for (const i of paused) fx.cluster.server(i).pause();
      const before = grants(await log(resource));
      // Progress of each kind after the fault, by events: a starving side never gets there.
      await until(() => everyKind(30, before), 'readers and writers got in 30 more times', 60_000);
      await fx.node(OBSERVER).set(`stop:${resource}`, '1');
      const codes = await Promise.all(children.map((c) => c.exited));
      fx.resumeAll();
      expect(children.flatMap((c) => c.lines)).toEqual([]);
      expect(codes).toEqual([0, 0, 0]);
      const events = await log(resource);
      expect(exclusionViolations(events)).toEqual([]);
      // A waiting writer stops new readers: a reader loop gets in at most once from before the
      // writer waited and once with the batch of the write lock released next (see rw-phases.ts).
      expect(mostReadsPastAWaitingWriter(events)).toBeLessThanOrEqual(2);
    }, 120_000); // bounds, not speed claims: the run ends by events
  });

  it('is not blocked by a waiting reader killed with SIGKILL beyond its lease', async () => {
    const resource = uniqueResource('rw-killed-reader');
    const redlock = fx.redlock({ retry: { retries: Infinity, delayMs: 50, jitterMs: 50 } }, lockUrls());
    const writer = await redlock.acquire(resource, 10_000, { mode: 'write' });
    // A reader in another process queues behind the writer, then dies.
    const reader = spawnWorker(resource, 'k', { ...MIXED, readers: 1, writers: 0, plain: 0, ttlMs: 1_500 });
    await onEveryNode(queued(resource), 1, 'the reader queues');
    reader.child.kill('SIGKILL');
    await reader.exited;
    const second = redlock.acquire(resource, 10_000, { mode: 'write', timeoutMs: 20_000 });
    await onEveryNode(writers(resource), 1, 'a second writer waits');
    // The release makes the dead reader the batch and keeps the key for it until its lease ends.
    await writer.release();
    await until(
      async () => (await fx.node(0).get(lockKeyOf(resource))) === '#readers' && (await fx.node(0).zcard(batch(resource))) === 1,
      'the key is kept for the batch',
    );
    const next = await second;
    // It got in once the dead reader's lease had ended: no live one is left in the batch.
    const [secs, micros] = await fx.node(0).time();
    expect(await fx.node(0).zcount(batch(resource), Number(secs) * 1000 + Math.floor(Number(micros) / 1000), '+inf')).toBe(0);
    await next.release();
  });

  it('is not blocked by a waiting writer killed with SIGKILL beyond its lease', async () => {
    const resource = uniqueResource('rw-killed-writer');
    const redlock = fx.redlock({ retry: { retries: Infinity, delayMs: 50, jitterMs: 50 } }, lockUrls());
    const held = await redlock.acquire(resource, 10_000, { mode: 'read' });
    const writer = spawnWorker(resource, 'k', { ...MIXED, readers: 0, writers: 1, plain: 0, ttlMs: 1_500 });
    await onEveryNode(writers(resource), 1, 'the writer waits');
    writer.child.kill('SIGKILL');
    await writer.exited;
    // New readers are refused while its registration lives, then get in without it.
    expect(await redlock.tryAcquire(resource, 10_000, { mode: 'read' })).toBeNull();
    const reader = await redlock.acquire(resource, 10_000, { mode: 'read', timeoutMs: 20_000 });
    const [secs, micros] = await fx.node(0).time();
    expect(await fx.node(0).zcount(writers(resource), Number(secs) * 1000 + Math.floor(Number(micros) / 1000), '+inf')).toBe(0);
    await reader.release();
    await held.release();
  });
});
