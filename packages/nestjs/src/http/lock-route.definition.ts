import type { LockCallOptions } from '../options/lock-call-options.js';
import type { compileRouteKey, RouteLockKey } from '../keys/lock-key.js';
import type { LockedStatus } from '../options/redlock-options.js';

/** Options of `@LockRoute`. */
export interface LockRouteOptions extends Omit<LockCallOptions, 'onLocked' | 'wait'> {
  /** How long a request waits for a held key: `false` (default) answers 409/423 at once; a number waits up to that many ms. */
  readonly wait?: false | number;
  /** Status when contended, overriding the module's `lockedStatus`. */
  readonly lockedStatus?: LockedStatus;
}

/**
 * What `@LockRoute` stores on the handler (metadata key `LOCK_ROUTE_METADATA`), read by
 * `RedlockGuard`. In a file of its own so the decorator and the guard do not import each other.
 */
export interface LockRouteDefinition {
  readonly key: RouteLockKey;
  readonly options: LockRouteOptions;
  /** The compiled key: request (and context) to resources. */
  readonly resolve: ReturnType<typeof compileRouteKey>;
}
