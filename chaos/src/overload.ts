/**
 * The overload scenarios a worker runs on the nemesis' request, while the lock nodes are
 * healthy: a waiter storm (many waiters on one key, each holding briefly in turn) and a
 * burst (thousands of acquisitions of distinct keys issued in one tick). Every failure is
 * recorded like a cycle's, so the checker judges a `QuorumUnavailableError` here as a
 * false outage; the storm's holds are recorded as plain cycles (checked for overlaps).
 */
import type { LockEngine } from '@redlock-nest/core';
import type { CriticalSection } from './critical-section.js';
import type { CycleEvent, ErrorEvent } from './history.js';
import type { ScenarioResult } from './worker-config.js';

export interface OverloadContext {
  readonly redlock: LockEngine;
  readonly section: CriticalSection;
  readonly ttlMs: number;
  readonly record: (e: CycleEvent | ErrorEvent) => void;
  readonly errorEvent: (resource: string, err: unknown, callAt: number) => ErrorEvent;
}

/** How long each storm waiter holds the key. */
const STORM_HOLD_MS = 1;
/** A storm waiter's budget: generous, so only a library fault (not the queue) fails it. */
const STORM_WAIT_PER_WAITER_MS = 50;

function tally(results: ReadonlyArray<string | null>, size: number): ScenarioResult {
  const out: Record<string, number> = { size, granted: 0 };
  for (const r of results) {
    const k = r ?? 'granted';
    out[k] = (out[k] ?? 0) + 1;
  }
  return out as ScenarioResult;
}

/** `size` waiters on `resource`, all called in the same tick; each holds it briefly and releases. */
export async function waiterStorm(ctx: OverloadContext, resource: string, size: number, cycleBase: number): Promise<ScenarioResult> {
  const timeoutMs = Math.max(10_000, size * STORM_WAIT_PER_WAITER_MS);
  const one = async (i: number): Promise<string | null> => {
    const callAt = Date.now();
    try {
      const lock = await ctx.redlock.acquire(resource, ctx.ttlMs, { timeoutMs });
      try {
        const base = { cycle: cycleBase + i, resource, watchdog: false, callAt };
        ctx.record(await ctx.section.runPlain(lock, base, Date.now(), STORM_HOLD_MS));
      } finally {
        await lock.release();
      }
      return null;
    } catch (err) {
      ctx.record(ctx.errorEvent(resource, err, callAt));
      return err instanceof Error ? err.name : 'unknown';
    }
  };
  return tally(await Promise.all(Array.from({ length: size }, (_, i) => one(i))), size);
}

/** `size` acquisitions of distinct keys (`<prefix>-<i>`) issued in one tick, each released at once. */
export async function burst(ctx: OverloadContext, prefix: string, size: number): Promise<ScenarioResult> {
  const one = async (i: number): Promise<string | null> => {
    const resource = `${prefix}-${i}`;
    const callAt = Date.now();
    try {
      const lock = await ctx.redlock.acquire(resource, ctx.ttlMs * 5, { timeoutMs: ctx.ttlMs * 5 });
      await lock.release();
      return null;
    } catch (err) {
      ctx.record(ctx.errorEvent(resource, err, callAt));
      return err instanceof Error ? err.name : 'unknown';
    }
  };
  return tally(await Promise.all(Array.from({ length: size }, (_, i) => one(i))), size);
}
