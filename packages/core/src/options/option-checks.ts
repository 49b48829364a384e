import { DEFAULT_RETRY, MAX_PERMITS, MAX_RESOURCE_LENGTH, MAX_TTL_MS, type ResolvedRetry, type RetryOptions } from './options.js';
import { checkBoolean, checkNumber, checkObject, describe, fail } from './value-checks.js';

/*
 * One validator per option: the core, the NestJS decorators, the module and the testing module
 * all call these, so an option has one rule and one message everywhere. `what` names the option
 * as the caller spells it; a layer prefixes its context there (`@WithLock on Orders.pay: ttl`)
 * instead of re-implementing the rule.
 *
 * This file holds the rule of each single option (and of the resources named); the checks of a
 * whole options object live beside it: acquire-option-checks.ts (one acquisition's options) and
 * redlock-option-checks.ts (a Redlock's options, merged over the defaults).
 */

/**
 * The rule of a lock TTL in ms: a whole number from 1 to 2^31-1 (the longest a Node.js timer
 * waits, so the watchdog can schedule it). Returns it; throws `RedlockArgumentError` otherwise.
 *
 * @example
 * ```ts
 * checkTtl(10_000); // 10000
 * checkTtl(0, '@WithLock on Orders.pay: ttl'); // throws: "… ttl (lock time-to-live in ms) must be at least 1, got 0."
 * ```
 */
export function checkTtl(ttlMs: unknown, what = 'ttlMs'): number {
  return checkNumber(ttlMs, `${what} (lock time-to-live in ms)`, { min: 1, integer: true, max: MAX_TTL_MS });
}

/** A TTL the drift allowance (`ttl × driftFactor + driftConstantMs`) eats entirely could never give a valid lock. */
export function checkTtlOverDrift(ttlMs: number, driftMs: number): void {
  if (ttlMs <= driftMs) {
    fail(
      `ttlMs (${ttlMs}) must be longer than the clock-drift allowance of ${driftMs} ms ` +
        '(ttl × driftFactor + driftConstantMs), or no lock could ever be valid. Use a longer ttl.',
    );
  }
}

/**
 * The rule of an acquisition's deadline in ms (`timeoutMs`, the NestJS `wait`): a number ≥ 0, or
 * `Infinity` to wait until the signal aborts.
 *
 * @example
 * ```ts
 * checkTimeoutMs(2_000); // 2000
 * ```
 */
export function checkTimeoutMs(timeoutMs: unknown, what = 'timeoutMs'): number {
  return checkNumber(timeoutMs, what, { allowInfinity: true });
}

/**
 * The rule of `maxHoldMs` (how long `using()` keeps extending a lock): a number ≥ 1, or `Infinity`.
 *
 * @example
 * ```ts
 * checkMaxHoldMs(60_000); // 60000
 * ```
 */
export function checkMaxHoldMs(maxHoldMs: unknown, what = 'maxHoldMs'): number {
  return checkNumber(maxHoldMs, what, { min: 1, allowInfinity: true });
}

/**
 * The rule of `fencing` (obtain a fencing token): a boolean.
 *
 * @example
 * ```ts
 * checkFencing(true); // true
 * ```
 */
export function checkFencing(fencing: unknown, what = 'fencing'): boolean {
  return checkBoolean(fencing, what);
}

/**
 * The rule of `fair` (wait in the resource's FIFO queue, see docs/fair-lock.md): a boolean.
 *
 * @example
 * ```ts
 * checkFair(true); // true
 * ```
 */
export function checkFair(fair: unknown, what = 'fair'): boolean {
  return checkBoolean(fair, what);
}

/**
 * The rule of `keyPrefix` (prefix of every key the library writes): a string.
 *
 * @example
 * ```ts
 * checkKeyPrefix('tenant-a:'); // 'tenant-a:'
 * ```
 */
export function checkKeyPrefix(keyPrefix: unknown, what = 'keyPrefix'): string {
  if (typeof keyPrefix !== 'string') fail(`${what} must be a string, got ${describe(keyPrefix)}.`);
  return keyPrefix;
}

/**
 * The rule of a retry policy: `false`, or an object whose `retries` is a whole number ≥ 0 (or
 * `Infinity`) and whose `delayMs` and `jitterMs` are numbers ≥ 0. Returns it as given.
 *
 * @example
 * ```ts
 * checkRetry({ retries: 5, delayMs: 200 });
 * checkRetry(false);
 * ```
 */
export function checkRetry(retry: unknown, what = 'retry'): RetryOptions | false {
  if (retry === false) return false;
  checkObject(retry, `${what} (an object or false)`);
  if (retry === undefined) fail(`${what} must be an object or false, got undefined.`);
  const r = retry as RetryOptions;
  if (r.retries !== undefined) checkNumber(r.retries, `${what}.retries`, { integer: true, allowInfinity: true });
  if (r.delayMs !== undefined) checkNumber(r.delayMs, `${what}.delayMs`);
  if (r.jitterMs !== undefined) checkNumber(r.jitterMs, `${what}.jitterMs`);
  return r;
}

/** Merges and validates a retry policy over `fallback`. */
export function resolveRetry(retry: unknown, fallback: ResolvedRetry | false, what = 'retry'): ResolvedRetry | false {
  if (retry === undefined) return fallback;
  const r = checkRetry(retry, what);
  if (r === false) return false;
  const base = fallback === false ? DEFAULT_RETRY : fallback;
  return { retries: r.retries ?? base.retries, delayMs: r.delayMs ?? base.delayMs, jitterMs: r.jitterMs ?? base.jitterMs };
}

/**
 * Normalises one resource or a list to a de-duplicated list, each a non-empty string of at most
 * `MAX_RESOURCE_LENGTH` characters.
 *
 * @example
 * ```ts
 * normalizeResources(['account:1', 'account:2', 'account:1']); // ['account:1', 'account:2']
 * ```
 */
export function normalizeResources(resource: unknown): string[] {
  const list = Array.isArray(resource) ? resource : [resource];
  if (list.length === 0) fail('resource must name at least one resource, got an empty array.');
  const out = new Set<string>();
  for (const r of list) {
    if (typeof r !== 'string') {
      fail(`resource must be a string (or an array of strings), got ${describe(r)}. Convert ids with String(id).`);
    }
    if (r.length === 0) fail('resource must be a non-empty string, got "".');
    if (r.length > MAX_RESOURCE_LENGTH) {
      fail(`resource is ${r.length} characters long; the limit is ${MAX_RESOURCE_LENGTH}. Hash long identifiers first.`);
    }
    out.add(r);
  }
  return [...out];
}

/**
 * The rule of `mode` (a read-write lock): `'read'` or `'write'`.
 *
 * @example
 * ```ts
 * checkMode('read'); // 'read'
 * ```
 */
export function checkMode(mode: unknown, what = 'mode'): 'read' | 'write' {
  if (mode !== 'read' && mode !== 'write') fail(`${what} must be 'read' or 'write' (or left out for a plain lock), got ${describe(mode)}.`);
  return mode;
}

/**
 * The rule of `permits` (a semaphore): a whole number from 1 to `MAX_PERMITS` (1024).
 *
 * @example
 * ```ts
 * checkPermits(5); // 5
 * ```
 */
export function checkPermits(permits: unknown, what = 'permits'): number {
  return checkNumber(permits, `${what} (semaphore permits)`, { min: 1, integer: true, max: MAX_PERMITS });
}
