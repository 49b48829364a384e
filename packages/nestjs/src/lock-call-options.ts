import { checkFencing, checkMaxHoldMs, checkTimeoutMs, checkTtl, RedlockArgumentError, type UsingOptions } from '@redlock-nest/core';

/** What a locked call does when the key is held by someone else. */
export type OnLocked = 'throw' | 'skip';

/**
 * Per-call options of `@WithLock` and `@LockRoute`.
 *
 * @example
 * ```ts
 * @WithLock('report:daily', { onLocked: 'skip' })         // cron dedupe: other instances skip
 * @WithLock('order:<id>', { wait: 2_000, fencing: true }) // wait up to 2 s, get a fencing token
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
  /** Stop extending after this many ms (the lock then expires and its signal aborts). Default: the module's `maxHoldMs`. */
  readonly maxHoldMs?: number;
  /**
   * Which Redlock instance locks: the `name` of a `RedlockModule.forRoot({ name, nodes })` import.
   * Default: the unnamed instance.
   */
  readonly redlock?: string;
}

/**
 * Validates call options once, at decoration time, so a typo fails when the class loads. Each
 * option the core also has (`ttl`, `wait` as the core's `timeoutMs`, `fencing`, `maxHoldMs`) is
 * checked by the core's own validator, with `where` as the context of its message.
 */
export function checkLockCallOptions(options: unknown, where: string): LockCallOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RedlockArgumentError(`${where}: lock options must be an object like { ttl: 10_000, wait: false }.`);
  }
  const o = options as LockCallOptions;
  if (o.ttl !== undefined) checkTtl(o.ttl, `${where}: ttl`);
  if (o.wait !== undefined && o.wait !== false) checkTimeoutMs(o.wait, `${where}: wait (false or a deadline in ms)`);
  const onLocked: unknown = o.onLocked; // JavaScript callers can pass anything
  if (onLocked !== undefined && onLocked !== 'throw' && onLocked !== 'skip') {
    throw new RedlockArgumentError(`${where}: onLocked must be 'throw' or 'skip', got ${String(o.onLocked)}.`);
  }
  if (o.fencing !== undefined) checkFencing(o.fencing, `${where}: fencing`);
  if (o.maxHoldMs !== undefined) checkMaxHoldMs(o.maxHoldMs, `${where}: maxHoldMs`);
  if (o.redlock !== undefined && (typeof o.redlock !== 'string' || o.redlock === '')) {
    throw new RedlockArgumentError(
      `${where}: redlock must be the name of a RedlockModule.forRoot({ name }) import, got ${String(o.redlock)}.`,
    );
  }
  return o;
}

/** Translates call options into the core's `using()` options. */
export function toUsingOptions(options: LockCallOptions): UsingOptions {
  const wait = options.wait ?? (options.onLocked === 'skip' ? false : undefined);
  return {
    ...(wait === false ? { retry: false as const } : wait !== undefined ? { timeoutMs: wait } : {}),
    ...(options.fencing ? { fencing: true } : {}),
    ...(options.maxHoldMs !== undefined ? { maxHoldMs: options.maxHoldMs } : {}),
  };
}
