import { RedlockArgumentError } from '../errors/errors.js';
import {
  DEFAULT_COHORT,
  DEFAULT_REDLOCK_OPTIONS,
  DEFAULT_RETRY,
  MAX_PERMITS,
  MAX_RESOURCE_LENGTH,
  MAX_TTL_MS,
  type AcquireOptions,
  type CohortOptions,
  type ResolvedCohort,
  type RedlockOptions,
  type ResolvedRedlockOptions,
  type ResolvedRetry,
  type RetryOptions,
  type UsingOptions,
} from './options.js';

/*
 * One validator per option: the core, the NestJS decorators, the module and the testing module
 * all call these, so an option has one rule and one message everywhere. `what` names the option
 * as the caller spells it; a layer prefixes its context there (`@WithLock on Orders.pay: ttl`)
 * instead of re-implementing the rule.
 */

function fail(message: string): never {
  throw new RedlockArgumentError(message);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}

function checkObject(value: unknown, what: string): asserts value is Record<string, unknown> | undefined {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    fail(`${what} must be an object, got ${describe(value)}.`);
  }
}

function checkBoolean(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') fail(`${what} must be a boolean, got ${describe(value)}.`);
  return value;
}

/** A finite number ≥ `min` (or `Infinity` where allowed). */
function checkNumber(
  value: unknown,
  what: string,
  { min = 0, integer = false, allowInfinity = false, max = Number.MAX_VALUE } = {},
): number {
  if (typeof value !== 'number' || Number.isNaN(value)) fail(`${what} must be a number, got ${describe(value)}.`);
  if (value === Infinity && allowInfinity) return value;
  if (!Number.isFinite(value)) fail(`${what} must be finite, got ${value}.`);
  if (integer && !Number.isInteger(value)) fail(`${what} must be a whole number, got ${value}.`);
  if (value < min) fail(`${what} must be at least ${min}, got ${value}.`);
  if (value > max) fail(`${what} must be at most ${max}, got ${value}.`);
  return value;
}

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
 * Validates `Redlock` options and merges them over {@link DEFAULT_REDLOCK_OPTIONS}. `where` prefixes
 * each option's name in messages (`RedlockModule options` → `RedlockModule options.keyPrefix …`).
 *
 * @example
 * ```ts
 * checkRedlockOptions({ keyPrefix: 'tenant-a:', retry: { retries: 5 } }).nodeTimeoutMs; // 500
 * ```
 */
export function checkRedlockOptions(options: unknown, where?: string): ResolvedRedlockOptions {
  const name = (option: string): string => (where ? `${where}.${option}` : option);
  checkObject(options, where ?? 'Redlock options');
  const o = (options ?? {}) as RedlockOptions;
  const d = DEFAULT_REDLOCK_OPTIONS;
  if (o.onWarning !== undefined && typeof o.onWarning !== 'function') {
    fail(`${name('onWarning')} must be a function, got ${describe(o.onWarning)}.`);
  }
  return {
    keyPrefix: o.keyPrefix === undefined ? d.keyPrefix : checkKeyPrefix(o.keyPrefix, name('keyPrefix')),
    driftFactor: o.driftFactor === undefined ? d.driftFactor : checkNumber(o.driftFactor, name('driftFactor'), { max: 0.5 }),
    driftConstantMs: o.driftConstantMs === undefined ? d.driftConstantMs : checkNumber(o.driftConstantMs, name('driftConstantMs')),
    nodeTimeoutMs: o.nodeTimeoutMs === undefined ? d.nodeTimeoutMs : checkNumber(o.nodeTimeoutMs, name('nodeTimeoutMs'), { min: 1 }),
    retry: resolveRetry(o.retry, d.retry, name('retry')),
    maxHoldMs: o.maxHoldMs === undefined ? d.maxHoldMs : checkMaxHoldMs(o.maxHoldMs, name('maxHoldMs')),
    checkIndependence:
      o.checkIndependence === undefined ? d.checkIndependence : checkBoolean(o.checkIndependence, name('checkIndependence')),
    restartRule: resolveRestartRule(o.restartRule, name('restartRule')),
    tracing: o.tracing === undefined ? d.tracing : checkBoolean(o.tracing, name('tracing')),
    onWarning: o.onWarning ?? d.onWarning,
    fair: o.fair === undefined ? d.fair : checkFair(o.fair, name('fair')),
    fairWaiterTtlMs:
      o.fairWaiterTtlMs === undefined
        ? d.fairWaiterTtlMs
        : checkNumber(o.fairWaiterTtlMs, name('fairWaiterTtlMs'), { min: 30, integer: true, max: MAX_TTL_MS }),
    cohort: checkCohort(o.cohort, name('cohort')),
  };
}

/** Merges user options over {@link DEFAULT_REDLOCK_OPTIONS}, validating each. */
export function resolveRedlockOptions(options: unknown): ResolvedRedlockOptions {
  return checkRedlockOptions(options);
}

/**
 * The rule of `cohort` (local hand-offs, see docs/cohorting.md): `false`, or an object whose
 * `maxHandoffs` is a whole number ≥ 1 and whose `maxHoldMs` is a number ≥ 1 (each may be
 * `Infinity`: no bound of that kind). Returns it merged over the defaults.
 *
 * @example
 * ```ts
 * checkCohort({ maxHandoffs: 4 }); // { maxHandoffs: 4, maxHoldMs: 100 }
 * checkCohort(false); // false
 * ```
 */
export function checkCohort(value: unknown, what = 'cohort'): ResolvedCohort | false {
  if (value === undefined) return DEFAULT_COHORT;
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(`${what} must be false or { maxHandoffs?: number, maxHoldMs?: number }, got ${describe(value)}.`);
  }
  const c = value as CohortOptions;
  const maxHandoffs =
    c.maxHandoffs === undefined
      ? DEFAULT_COHORT.maxHandoffs
      : checkNumber(c.maxHandoffs, `${what}.maxHandoffs (local hand-offs in a row; false turns cohorting off)`, {
          min: 1,
          integer: true,
          allowInfinity: true,
        });
  const maxHoldMs =
    c.maxHoldMs === undefined
      ? DEFAULT_COHORT.maxHoldMs
      : checkNumber(c.maxHoldMs, `${what}.maxHoldMs (ms a run of local hand-offs may keep the lock)`, { min: 1, allowInfinity: true });
  return { maxHandoffs, maxHoldMs };
}

function resolveRestartRule(value: RedlockOptions['restartRule'] | undefined, what: string): ResolvedRedlockOptions['restartRule'] {
  if (value === undefined) return DEFAULT_REDLOCK_OPTIONS.restartRule;
  if (value === false) return false;
  // JavaScript callers can pass anything.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the declared type is not checked at run time
  if (typeof value !== 'object' || value === null) {
    fail(`${what} must be false or { maxTtlMs?: number, declaredTtlMs?: number }, got ${describe(value)}.`);
  }
  const maxTtlMs = value.maxTtlMs === undefined ? 0 : checkNumber(value.maxTtlMs, `${what}.maxTtlMs`, { max: MAX_TTL_MS });
  const declaredTtlMs =
    value.declaredTtlMs === undefined ? 0 : checkNumber(value.declaredTtlMs, `${what}.declaredTtlMs`, { max: MAX_TTL_MS });
  return { maxTtlMs, declaredTtlMs };
}

/**
 * Validates the options of one acquisition (`acquire`, `tryAcquire`, `using`): `signal`,
 * `timeoutMs`, `fencing`, `maxHoldMs`, `retry` and `fair`, each by its own rule. Returns them as given.
 *
 * @example
 * ```ts
 * checkAcquireOptions({ timeoutMs: 2_000, fencing: true });
 * ```
 */
export function checkAcquireOptions(options: unknown, what = 'acquire options'): AcquireOptions & UsingOptions {
  checkObject(options, what);
  const o = (options ?? {}) as UsingOptions;
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    fail(`${what}.signal must be an AbortSignal, got ${describe(o.signal)}.`);
  }
  if (o.timeoutMs !== undefined) checkTimeoutMs(o.timeoutMs, `${what}.timeoutMs`);
  if (o.fencing !== undefined) checkFencing(o.fencing, `${what}.fencing`);
  if (o.maxHoldMs !== undefined) checkMaxHoldMs(o.maxHoldMs, `${what}.maxHoldMs`);
  if (o.retry !== undefined) checkRetry(o.retry, `${what}.retry`);
  if (o.mode !== undefined) checkMode(o.mode, `${what}.mode`);
  if (o.permits !== undefined) checkPermits(o.permits, `${what}.permits`);
  if (o.permits !== undefined && o.mode !== undefined)
    fail(`${what}: mode and permits do not combine; a semaphore has no read or write mode.`);
  if (o.permits !== undefined && o.fencing === true) {
    fail(`${what}: a semaphore permit has no fencing token (up to \`permits\` holders run at once); drop fencing.`);
  }
  if (o.fair !== undefined) checkFair(o.fair, `${what}.fair`);
  if (o.fair === true && (o.mode !== undefined || o.permits !== undefined)) {
    fail(`${what}: fair queues plain locks only; drop fair, or mode / permits.`);
  }
  return o;
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
