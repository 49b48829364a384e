import { RedlockArgumentError } from '@redlock-nest/core';
import type { LockCallOptions } from '../options/lock-call-options.js';
import type { LockKey } from '../keys/lock-key.js';
import { lockedMethod, type WithLockDecorator } from './with-lock.decorator.js';

/** Options of `@WithSemaphore`: those of `@WithLock` without fencing or mode, plus the number of permits. */
export interface WithSemaphoreOptions extends Omit<LockCallOptions, 'fencing' | 'mode'> {
  /** How many calls may run at once across every instance (a whole number from 1 to 1024). */
  readonly permits: number;
}

/**
 * Runs the method holding one permit of a distributed semaphore on `key`: at most `permits`
 * calls run at once across all instances, each permit auto-extended while its call runs. Same
 * key templates, results (Promise, Observable, async generator), `wait`, `onLocked`, `ttl` and
 * `redlock` as `@WithLock`; on an HTTP handler the same mapping (409/423 with Retry-After, 503).
 * A semaphore's keys are its own: `@WithLock('export:<id>')` does not count against it.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Exports {
 *   @WithSemaphore('export:<tenantId>', { permits: 5, wait: 2_000 })
 *   async run(tenantId: string) { ... } // at most 5 exports per tenant at once
 * }
 * ```
 */
export function WithSemaphore(key: LockKey, options: WithSemaphoreOptions): WithLockDecorator {
  // JavaScript callers can leave it out.
  const permits: unknown = (options as Partial<WithSemaphoreOptions> | undefined)?.permits;
  if (permits === undefined) {
    throw new RedlockArgumentError('@WithSemaphore needs the number of permits: @WithSemaphore(key, { permits: 5 }).');
  }
  return lockedMethod('@WithSemaphore', key, options);
}
