import { RedlockArgumentError, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';

/** HTTP status sent when a route's lock is held by someone else. */
export type LockedStatus = 409 | 423;

/** What the module does when the configured nodes are not independent masters. */
export type IndependenceCheckMode = 'off' | 'warn' | 'fail';

/** What the module does with `redlock.checkNodes()` findings at startup. */
export type NodeCheckMode = 'off' | 'warn' | 'fail';

/**
 * Options of `RedlockModule.forRoot()` / the factory of `forRootAsync()`.
 * Everything of the core's `RedlockOptions` (key prefix, drift, node timeout, retry, maxHoldMs…)
 * plus the module-level defaults below. Core defaults stay in the core's `DEFAULT_REDLOCK_OPTIONS`.
 *
 * @example
 * ```ts
 * RedlockModule.forRoot({
 *   nodes: ['redis://redis-a:6379', 'redis://redis-b:6379', 'redis://redis-c:6379'],
 *   ttl: 10_000,
 *   lockedStatus: 423,
 *   independenceCheck: 'fail',
 * });
 * ```
 */
export interface RedlockModuleOptions extends RedlockOptions {
  /**
   * The independent Redis nodes: `redis://` URLs, ioredis options or ioredis instances.
   * Connections the module creates are closed on shutdown; instances you pass in are left open.
   */
  readonly nodes: ReadonlyArray<RedisNodeInput>;
  /** Default lock TTL in ms for `@WithLock` and `@LockRoute` (auto-extended while the call runs). */
  readonly ttl?: number;
  /** Status of a contended `@LockRoute`: 409 Conflict (default) or 423 Locked. */
  readonly lockedStatus?: LockedStatus;
  /**
   * At startup, check that the nodes are independent masters (no replica, no server listed twice):
   * `'warn'` logs problems (default), `'fail'` makes `app.init()` reject, `'off'` skips the check.
   */
  readonly independenceCheck?: IndependenceCheckMode;
  /**
   * At startup, run `redlock.checkNodes()` (persistence, eviction policy, clock rate, ACL, ...):
   * `'warn'` logs every warn and error finding, `'fail'` also makes `app.init()` reject with
   * `NodeCheckError` on an error finding, `'off'` skips it (default: it takes about half a second).
   */
  readonly nodeCheck?: NodeCheckMode;
}

/** Module options after defaults were merged: the only shape the rest of the package reads. */
export interface ResolvedRedlockModuleOptions {
  readonly nodes: ReadonlyArray<RedisNodeInput>;
  /** What is handed to `new Redlock(nodes, core)`; core defaults are applied there. */
  readonly core: RedlockOptions;
  readonly ttl: number;
  readonly lockedStatus: LockedStatus;
  readonly independenceCheck: IndependenceCheckMode;
  readonly nodeCheck: NodeCheckMode;
}

/** The single source of the module-level defaults. */
export const DEFAULT_REDLOCK_MODULE_OPTIONS = Object.freeze({
  /** Long enough for most request handlers; the watchdog extends it every ttl/3 anyway. */
  ttl: 10_000,
  lockedStatus: 409 as LockedStatus,
  independenceCheck: 'warn' as IndependenceCheckMode,
  nodeCheck: 'off' as NodeCheckMode,
});

/** Merges user options over {@link DEFAULT_REDLOCK_MODULE_OPTIONS} and validates the module-level ones. */
export function resolveModuleOptions(options: RedlockModuleOptions | undefined): ResolvedRedlockModuleOptions {
  if (!options || typeof options !== 'object') {
    throw new RedlockArgumentError(
      'RedlockModule.forRoot() needs options: RedlockModule.forRoot({ nodes: ["redis://host:6379"] }).',
    );
  }
  const { nodes, ttl, lockedStatus, independenceCheck, nodeCheck, ...core } = options;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockArgumentError(
      'RedlockModule options.nodes must list at least one Redis node, e.g. { nodes: ["redis://host:6379"] }.',
    );
  }
  const d = DEFAULT_REDLOCK_MODULE_OPTIONS;
  if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 1)) {
    throw new RedlockArgumentError(`RedlockModule options.ttl must be a whole number of ms ≥ 1, got ${String(ttl)}.`);
  }
  if (lockedStatus !== undefined && lockedStatus !== 409 && lockedStatus !== 423) {
    throw new RedlockArgumentError(`RedlockModule options.lockedStatus must be 409 or 423, got ${String(lockedStatus)}.`);
  }
  if (independenceCheck !== undefined && !['off', 'warn', 'fail'].includes(independenceCheck)) {
    throw new RedlockArgumentError(
      `RedlockModule options.independenceCheck must be 'off', 'warn' or 'fail', got ${String(independenceCheck)}.`,
    );
  }
  if (nodeCheck !== undefined && !['off', 'warn', 'fail'].includes(nodeCheck)) {
    throw new RedlockArgumentError(`RedlockModule options.nodeCheck must be 'off', 'warn' or 'fail', got ${String(nodeCheck)}.`);
  }
  return {
    nodes,
    core,
    ttl: ttl ?? d.ttl,
    lockedStatus: lockedStatus ?? d.lockedStatus,
    independenceCheck: independenceCheck ?? d.independenceCheck,
    nodeCheck: nodeCheck ?? d.nodeCheck,
  };
}
