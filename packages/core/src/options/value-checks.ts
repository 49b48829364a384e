import { RedlockArgumentError } from '../errors/errors.js';

/*
 * The generic checks the option validators are built from: a number in a range, a boolean, an
 * object, and how a bad value is quoted in the message. Apart from the per-option rules so each
 * rule file (option-checks.ts, acquire-option-checks.ts, redlock-option-checks.ts) words its
 * messages the same way without re-implementing them.
 */

/** Throws the `RedlockArgumentError` every validator throws. */
export function fail(message: string): never {
  throw new RedlockArgumentError(message);
}

/** A bad value as a message quotes it: long strings cut short, objects by their type only. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}

export function checkObject(value: unknown, what: string): asserts value is Record<string, unknown> | undefined {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    fail(`${what} must be an object, got ${describe(value)}.`);
  }
}

export function checkBoolean(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') fail(`${what} must be a boolean, got ${describe(value)}.`);
  return value;
}

/** A finite number ≥ `min` (or `Infinity` where allowed). */
export function checkNumber(
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
