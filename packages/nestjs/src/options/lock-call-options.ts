import { RedlockArgumentError, type LockMode, type UsingOptions } from '@redlock-nest/core';
import { checkFair, checkFencing, checkMaxHoldMs, checkMode, checkPermits, checkTimeoutMs, checkTtl } from '@redlock-nest/core/internal';

/** What a locked call does when the key is held by someone else. */
export type OnLocked = 'throw' | 'skip';

/**
 * Per-call options of `@WithLock` and `@LockRoute`.
 *
 * @example
 * ```ts
 * @WithLock('report:daily', { onLocked: 'skip' })         // cron dedupe: other instances skip
 * @WithLock('order:<id>', { wait: 2_000, fencing: true }) // wait up to 2 s, get a fencing token
 * @WithLock('invoice:<id>', { fair: true })               // waiters get it in order of arrival, across instances
 * ```
 */
export interface LockCallOptions {
  /** Lock TTL in ms, auto-extended while the call runs. Default: the module's `ttl`. */
  readonly ttl?: number;
  /**
   * How long to wait for a held key: `false` fails at once, a number waits up to that many ms.
   * Default: the module's `retry` policy, except with `onLocked: 'skip'`, where it is `false`
   * (a skipped cron run must not start late, after the other instance finished).
   */
  readonly wait?: false | number;
  /** `'throw'` (default) rejects with `LockNotAcquiredError`; `'skip'` resolves `undefined` without running. */
  readonly onLocked?: OnLocked;
  /** Obtain a fencing token (`currentLock().fencingToken`). */
  readonly fencing?: boolean;
  /**
   * A read-write lock: `'read'` shares the key with other readers, `'write'` excludes them (and
   * waiting writers keep new readers out). Left out: a plain lock, which excludes both.
   */
  readonly mode?: LockMode;
  /** Wait in a FIFO queue across processes (the core's `fair` option; one resource). Default: the Redlock's `fair`. */
  readonly fair?: boolean;
  /** Stop extending after this many ms (the lock then expires and its signal aborts). Default: the module's `maxHoldMs`. */
  readonly maxHoldMs?: number;
  /**
   * Which Redlock instance locks: the `name` of a `RedlockModule.forRoot({ name, nodes })` import.
   * Default: the unnamed instance.
   */
  readonly redlock?: string;
}

/**
 * The options a locked call runs with: {@link LockCallOptions}, plus the semaphore's `permits`
 * that only `@WithSemaphore` sets (it is not an option of `@WithLock` or `@LockRoute`).
 * @internal
 */
export interface LockedCallOptions extends LockCallOptions {
  /** A semaphore permit of `permits` instead of a lock (set by `@WithSemaphore`). */
  readonly permits?: number;
}

/**
 * Validates call options once, at decoration time, so a typo fails when the class loads. Each
 * option the core also has (`ttl`, `wait` as the core's `timeoutMs`, `fencing`, `maxHoldMs`) is
 * checked by the core's own validator, with `where` as the context of its message.
 */
export function checkLockCallOptions(options: unknown, where: string, semaphore = false): LockedCallOptions {
  if (options === undefined) return checked({});
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RedlockArgumentError(`${where}: lock options must be an object like { ttl: 10_000, wait: false }.`);
  }
  const o = options as LockedCallOptions;
  // TypeScript refuses it; JavaScript callers (and casts) would otherwise get a semaphore from a lock decorator.
  if (!semaphore && o.permits !== undefined) {
    throw new RedlockArgumentError(
      `${where}: permits is an option of @WithSemaphore only; use @WithSemaphore(key, { permits: ${String(o.permits)} }) for a semaphore, or drop permits for a lock.`,
    );
  }
  if (o.ttl !== undefined) checkTtl(o.ttl, `${where}: ttl`);
  if (o.wait !== undefined && o.wait !== false) checkTimeoutMs(o.wait, `${where}: wait (false or a deadline in ms)`);
  const onLocked: unknown = o.onLocked; // JavaScript callers can pass anything
  if (onLocked !== undefined && onLocked !== 'throw' && onLocked !== 'skip') {
    throw new RedlockArgumentError(`${where}: onLocked must be 'throw' or 'skip', got ${String(o.onLocked)}.`);
  }
  if (o.fencing !== undefined) checkFencing(o.fencing, `${where}: fencing`);
  if (o.fair !== undefined) checkFair(o.fair, `${where}: fair`);
  if (o.maxHoldMs !== undefined) checkMaxHoldMs(o.maxHoldMs, `${where}: maxHoldMs`);
  if (o.mode !== undefined) checkMode(o.mode, `${where}: mode`);
  if (o.permits !== undefined) checkPermits(o.permits, `${where}: permits`);
  if (o.permits !== undefined && (o.mode !== undefined || o.fencing === true)) {
    throw new RedlockArgumentError(`${where}: a semaphore takes neither mode nor fencing (up to \`permits\` holders run at once).`);
  }
  if (o.fair === true && (o.mode !== undefined || o.permits !== undefined)) {
    throw new RedlockArgumentError(`${where}: fair queues plain locks only; drop fair, or mode / permits.`);
  }
  if (o.redlock !== undefined && (typeof o.redlock !== 'string' || o.redlock === '')) {
    throw new RedlockArgumentError(
      `${where}: redlock must be the name of a RedlockModule.forRoot({ name }) import, got ${String(o.redlock)}.`,
    );
  }
  return checked(o);
}

/**
 * The core `using()` options of each options object `checkLockCallOptions` returned, made once
 * when it was checked: those objects are frozen, so their calls need not rebuild them each time.
 */
const usingOptionsCache = new WeakMap<LockedCallOptions, UsingOptions | undefined>();

/** Freezes checked options (a copy: the caller's object stays theirs) and derives their `using()` options once. */
function checked(options: LockedCallOptions): LockedCallOptions {
  const frozen = Object.freeze({ ...options });
  const using = toUsingOptions(frozen);
  usingOptionsCache.set(frozen, Object.keys(using).length === 0 ? undefined : Object.freeze(using));
  return frozen;
}

/**
 * {@link toUsingOptions} of `options`: made once for options `checkLockCallOptions` returned
 * (frozen, shared by all calls), on each call for others; `undefined` when they ask for nothing
 * beyond the defaults, which the core's `using()` then takes without reading an options object.
 * @internal
 */
export function usingOptionsOf(options: LockedCallOptions): UsingOptions | undefined {
  if (usingOptionsCache.has(options)) return usingOptionsCache.get(options);
  const using = toUsingOptions(options);
  return Object.keys(using).length === 0 ? undefined : using;
}

/** Translates call options into the core's `using()` options. */
export function toUsingOptions(options: LockedCallOptions): UsingOptions {
  const wait = options.wait ?? (options.onLocked === 'skip' ? false : undefined);
  return {
    ...(wait === false ? { retry: false as const } : wait !== undefined ? { timeoutMs: wait } : {}),
    ...(options.fencing ? { fencing: true } : {}),
    ...(options.mode !== undefined ? { mode: options.mode } : {}),
    ...(options.permits !== undefined ? { permits: options.permits } : {}),
    ...(options.fair !== undefined ? { fair: options.fair } : {}),
    ...(options.maxHoldMs !== undefined ? { maxHoldMs: options.maxHoldMs } : {}),
  };
}
