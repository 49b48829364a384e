/*
 * How a Lock (lock.ts) presents itself to `JSON.stringify`, `String()` and `util.inspect`: its
 * resources, expiration, fencing token and state, never its owner token. Plain functions apart
 * from the class, which delegates its toJSON, toString and inspect hook here; they read only the
 * lock's public getters, so this file needs no import of lock.ts.
 */
import { inspect, type InspectOptions } from 'node:util';
import type { LockJSON, LockState } from './lock-types.js';

/** What the presentation reads of a Lock: its public getters. */
export interface ShownLock {
  readonly resources: readonly string[];
  readonly expiration: number;
  readonly fencingToken: bigint | undefined;
  readonly fencingTokens: ReadonlyMap<string, bigint> | undefined;
  readonly state: LockState;
  toJSON(): LockJSON;
}

/** `Lock.toJSON()`: resources, expiration, fencing token (a string) and state; never the owner token. */
export function lockJSON(lock: ShownLock): LockJSON {
  const tokens = lock.fencingTokens;
  return {
    resources: [...lock.resources],
    expiration: lock.expiration,
    ...(lock.fencingToken === undefined ? {} : { fencingToken: lock.fencingToken.toString() }),
    ...(tokens && tokens.size > 1 ? { fencingTokens: Object.fromEntries([...tokens].map(([r, t]) => [r, t.toString()])) } : {}),
    state: lock.state,
  };
}

/** `Lock.toString()`: one line, `Lock ["order:42"] held until 2026-01-01T00:00:00.000Z, fencing token 17`. */
export function lockString(lock: ShownLock): string {
  const fence = lock.fencingToken === undefined ? '' : `, fencing token ${lock.fencingToken}`;
  return `Lock ${JSON.stringify(lock.resources)} ${lock.state} until ${new Date(lock.expiration).toISOString()}${fence}`;
}

/** `Lock[inspect.custom]`: {@link ShownLock.toJSON}'s fields, no token, timers or internals. */
export function inspectLock(lock: ShownLock, depth: number, options: InspectOptions, nested: typeof inspect): string {
  if (depth < 0) return `[Lock ${lock.state}]`;
  return `Lock ${nested(lock.toJSON(), { ...options, depth: options.depth == null ? null : options.depth - 1 })}`;
}
