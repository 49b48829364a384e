import { checkFair, checkKeyPrefix, checkMaxHoldMs, resolveRetry } from './option-checks.js';
import {
  DEFAULT_COHORT,
  DEFAULT_REDLOCK_OPTIONS,
  MAX_TTL_MS,
  type CohortOptions,
  type RedlockOptions,
  type ResolvedCohort,
  type ResolvedRedlockOptions,
} from './options.js';
import { checkBoolean, checkNumber, checkObject, describe, fail } from './value-checks.js';

/*
 * The check of a Redlock's options (the constructor's, the NestJS module's): each option by its
 * rule, merged over DEFAULT_REDLOCK_OPTIONS, with the rules of the nested groups (`cohort`,
 * `restartRule`). Apart from the single-option rules (option-checks.ts) because it runs once per
 * instance and is the one place the defaults are resolved.
 */

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
