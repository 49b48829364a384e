/**
 * Validity intervals of holders, recorded in one process (monotonic clock), and the checks
 * read-write locks and semaphores must pass: no reader overlaps a writer, at most N overlap.
 */
import type { Lock, Redlock } from '@redlock-nest/core';
import type { RedisCluster } from '../harness/redis-server.js';
import { reachable } from '../harness/test-utils.js';

export interface Interval {
  readonly kind: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Runs `work` while holding `lock` and records the interval of the critical section, when
 * the lock was still valid at its end (a holder told it lost its lock makes no claim).
 */
export async function hold(lock: Lock, kind: string, intervals: Interval[], work: () => Promise<unknown>): Promise<void> {
  const start = performance.now();
  try {
    await work();
    const end = performance.now();
    if (lock.state === 'held' && lock.remainingMs > 0) intervals.push({ kind, start, end });
  } finally {
    await lock.release();
  }
}

/** The most intervals (of `kinds`, or all) overlapping at one instant. */
export function maxOverlap(intervals: readonly Interval[], kinds?: readonly string[]): number {
  const events: Array<[number, number]> = [];
  for (const i of intervals) {
    if (kinds && !kinds.includes(i.kind)) continue;
    events.push([i.start, 1], [i.end, -1]);
  }
  // Ends before starts at the same instant: touching intervals do not overlap.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of events) {
    now += d;
    max = Math.max(max, now);
  }
  return max;
}

/** Pairs (a of kind `x`, b of kind `y`) whose intervals overlap. */
export function overlapsBetween(intervals: readonly Interval[], x: string, y: string): number {
  let n = 0;
  for (const a of intervals) {
    if (a.kind !== x) continue;
    for (const b of intervals) if (b !== a && b.kind === y && a.start < b.end && b.start < a.end) n++;
  }
  return n;
}

export type Fault = 'none' | 'kill' | 'pause' | 'restart-empty';

/**
 * Injects `fault` on nodes `which` (a minority) of `cluster`: killed, paused (SIGSTOP) or
 * killed, wiped and restarted empty (then awaited reachable by `redlocks`).
 */
export async function inject(fault: Fault, cluster: RedisCluster, which: readonly number[], redlocks: readonly Redlock[]): Promise<void> {
  for (const i of which) {
    const server = cluster.server(i);
    if (fault === 'kill') await server.kill();
    if (fault === 'pause') server.pause();
    if (fault === 'restart-empty') {
      await server.kill();
      server.wipe();
      await server.restart();
    }
  }
  if (fault === 'restart-empty') for (const r of redlocks) for (const i of which) await reachable(r, i);
}

/** Undoes `inject` so the next test finds every node up. */
export async function heal(fault: Fault, cluster: RedisCluster, which: readonly number[]): Promise<void> {
  for (const i of which) {
    const server = cluster.server(i);
    if (fault === 'pause') server.resume();
    if (fault === 'kill') await server.restart();
  }
}
