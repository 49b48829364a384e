import { checkFair, checkFencing, checkMaxHoldMs, checkMode, checkPermits, checkRetry, checkTimeoutMs } from './option-checks.js';
import type { AcquireOptions, UsingOptions } from './options.js';
import { checkObject, describe, fail } from './value-checks.js';

/*
 * The check of one acquisition's whole options object: each option by its own rule
 * (option-checks.ts), then the combinations no single rule sees (mode with permits, fair with
 * either). Apart from those rules because it is the per-call entry: every acquire, tryAcquire and
 * using of a Redlock (and of the etcd engine) runs it first.
 */

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
