import { LockNotAcquiredError, type Lock, type UsingOptions } from '@redlock-nest/core';
import type { LockEngine } from './lock-service.base.js';

/**
 * A route's lock between the guard (which acquires it) and the interceptor (which releases it
 * when the response is done). Built on the core's `using()`, so the watchdog, `maxHoldMs` and
 * release semantics are the core's: the routine simply waits until {@link release} is called.
 */
export class RouteLockHold {
  /** Whether the interceptor took charge of releasing (otherwise the response's 'close' does). */
  private claimed = false;

  private constructor(
    readonly lock: Lock,
    /** The Redlock that holds `lock` (the lock-context owner). */
    readonly owner: LockEngine,
    private readonly finish: () => void,
    /** Settles once the lock is released; rejects with `LockLostError` if it was lost while held. */
    readonly settled: Promise<void>,
  ) {}

  /** Acquires `resources` and keeps them locked until `release()`. Rejects like `Redlock.acquire`. */
  static acquire(redlock: LockEngine, resources: readonly string[], ttlMs: number, options: UsingOptions): Promise<RouteLockHold> {
    return new Promise<RouteLockHold>((resolve, reject) => {
      let finish!: () => void;
      const finished = new Promise<void>((r) => {
        finish = r;
      });
      let hold: RouteLockHold | undefined;
      const settled = redlock.using(
        resources,
        ttlMs,
        (lock) => {
          hold = new RouteLockHold(lock, redlock, finish, settled);
          resolve(hold);
          return finished;
        },
        options,
      );
      // Before the routine ran this is the acquisition failure; after, the caller observes `settled`.
      settled.catch((err: unknown) => {
        // The hint of a contended route names @LockRoute's option (`wait`).
        if (!hold) reject(err instanceof LockNotAcquiredError ? err.forWaitOption('wait') : err);
      });
    });
  }

  /** The interceptor takes over; returns false if someone already did (one release owner only). */
  claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    return true;
  }

  /** True once the interceptor claimed the hold. */
  get isClaimed(): boolean {
    return this.claimed;
  }

  /** Ends the hold: stops the watchdog and releases the lock. Idempotent; never rejects. */
  release(): Promise<void> {
    this.finish();
    return this.settled.catch(() => undefined);
  }
}
