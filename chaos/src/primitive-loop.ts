/**
 * A chaos worker's second loop: read-write lock and semaphore holds, next to its lock cycles
 * (its own Redlock, so the nemesis hits both). Readers, writers and permit holders hold for a
 * few ms (past a watchdog extension now and then) and record every hold for the checker.
 */
import type { Lock, LockEngine, UsingOptions } from '@redlock-nest/core';
import type { HoldEvent } from './primitive-history.js';
import type { ErrorEvent } from './history.js';

export interface PrimitiveLoopContext {
  readonly redlock: LockEngine;
  readonly worker: number;
  readonly ttlMs: number;
  readonly acquireTimeoutMs: number;
  /** Permits of the semaphore `sem-0`; 0 leaves the primitives out. */
  readonly permits: number;
  readonly random: () => number;
  readonly record: (e: HoldEvent | ErrorEvent) => void;
  readonly stopping: () => boolean;
}

/** Resource of the read-write lock and of the semaphore every worker contends for. */
export const RW_RESOURCE = 'rw-0';
export const SEMAPHORE_RESOURCE = 'sem-0';

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs holds until `stopping()`; resolves with how many there were. */
export async function primitiveLoop(ctx: PrimitiveLoopContext): Promise<number> {
  if (ctx.permits <= 0) return 0;
  let n = 0;
  while (!ctx.stopping()) {
    n++;
    const r = ctx.random();
    const primitive: HoldEvent['primitive'] = r < 0.5 ? 'read' : r < 0.65 ? 'write' : 'semaphore';
    const resource = primitive === 'semaphore' ? SEMAPHORE_RESOURCE : RW_RESOURCE;
    const options: UsingOptions = primitive === 'semaphore' ? { permits: ctx.permits } : { mode: primitive };
    // Every 25th hold lasts past the first watchdog extension (at TTL/3).
    const holdMs = n % 25 === 0 ? ctx.ttlMs / 2 : 2 + ctx.random() * 6;
    const callAt = Date.now();
    try {
      let event: HoldEvent | undefined;
      const hold = async (lock: Lock): Promise<void> => {
        const acquiredAt = Date.now();
        await delay(holdMs);
        const releaseAt = Date.now();
        event = {
          type: 'hold',
          worker: ctx.worker,
          cycle: n,
          resource,
          primitive,
          ...(primitive === 'semaphore' ? { permits: ctx.permits } : {}),
          acquiredAt,
          validUntil: lock.expiration,
          releaseAt,
          lostSignal: lock.signal.aborted,
        };
      };
      await ctx.redlock
        .using(resource, ctx.ttlMs, hold, { ...options, timeoutMs: ctx.acquireTimeoutMs })
        // A lost lock (extensions failed while a majority was down) is in the record.
        .catch((err: unknown) => {
          if (!event) throw err;
        });
      if (event) ctx.record(event);
    } catch (err) {
      ctx.record({
        type: 'error',
        worker: ctx.worker,
        resource,
        error: err instanceof Error ? err.name : typeof err,
        callAt,
        at: Date.now(),
      });
      await delay(20 + ctx.random() * 20);
    }
  }
  return n;
}
