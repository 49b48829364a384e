import { RedlockArgumentError, type LockEngine, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { checkRedlockOptions, checkTtl } from '@redlock-nest/core/internal';

/** HTTP status sent when a route's lock is held by someone else. */
export type LockedStatus = 409 | 423;

/** What the module does when the configured nodes are not independent masters. */
export type IndependenceCheckMode = 'off' | 'warn' | 'fail';

/** How the module plugs into HTTP routes (module option `http`). */
export interface RedlockHttpOptions {
  /**
   * Apply `RedlockGuard` to every route (app-wide), so `@WithLock('order:<id>')` alone on a
   * controller handler locks before the pipes run, with the key resolved from the request
   * (`<id>` from route params, then query, then body). Default `false`: a `@WithLock` handler
   * then locks when it is called (after the pipes), unless the route uses `@UseGuards(RedlockGuard)`.
   * Either way its lock failures answer 409/423 + `Retry-After`, 503 or 400, never 500.
   * `@LockRoute` handlers always run their own guard, in their declared order.
   */
  readonly global?: boolean;
}

/** What the module does with `redlock.checkNodes()` findings at startup. */
export type NodeCheckMode = 'off' | 'warn' | 'fail';

/**
 * Options of `RedlockModule.forRoot()` / the factory of `forRootAsync()`.
 * Either `nodes` (Redis) with everything of the core's `RedlockOptions` (key prefix, drift, node
 * timeout, retry, maxHoldMs…), or a ready lock `engine` (any `LockEngine`, e.g. `EtcdLocks` of
 * `@redlock-nest/etcd`, configured through its own constructor); plus the module-level defaults
 * below. Core defaults stay in the core's `DEFAULT_REDLOCK_OPTIONS`.
 *
 * @example
 * ```ts
 * RedlockModule.forRoot({
 *   nodes: ['redis://redis-a:6379', 'redis://redis-b:6379', 'redis://redis-c:6379'],
 *   ttl: 10_000,
 *   lockedStatus: 423,
 *   independenceCheck: 'fail',
 * });
 * // or on etcd:
 * RedlockModule.forRoot({ engine: new EtcdLocks({ hosts: ['http://etcd-a:2379', 'http://etcd-b:2379', 'http://etcd-c:2379'] }) });
 * ```
 */
export interface RedlockModuleOptions extends RedlockOptions {
  /**
   * The independent Redis nodes: `redis://` URLs, ioredis options or ioredis instances.
   * Connections the module creates are closed on shutdown; instances you pass in are left open.
   * Required unless `engine` is given.
   */
  readonly nodes?: ReadonlyArray<RedisNodeInput>;
  /**
   * A lock engine to use instead of a Redlock over `nodes` (for example `new EtcdLocks({ hosts })`
   * of `@redlock-nest/etcd`). Its options are its constructor's: the core Redlock options are then
   * refused here. The module closes it on application shutdown (releasing the locks it still holds).
   * The startup checks (`independenceCheck`, `nodeCheck`) run when the engine has them.
   */
  readonly engine?: LockEngine;
  /** Default lock TTL in ms for `@WithLock` and `@LockRoute` (auto-extended while the call runs). */
  readonly ttl?: number;
  /** Status of a contended `@LockRoute`: 409 Conflict (default) or 423 Locked. */
  readonly lockedStatus?: LockedStatus;
  /**
   * At startup, check that the nodes are independent masters (no replica, no server listed twice),
   * with INFO on each node. `'fail'` (default) makes `app.init()` reject on a replica, a duplicate,
   * or a node whose ACL user may not run INFO; `'warn'` only logs replicas and refused INFO;
   * `'off'` skips the check, for ACL setups that cannot grant `+info`. The same server listed twice
   * is an error in every mode (by address when the module starts, by `run_id` when the check runs).
   */
  readonly independenceCheck?: IndependenceCheckMode;
  /** HTTP routes: `{ global: true }` locks every `@WithLock` handler before its pipes. */
  readonly http?: RedlockHttpOptions;
  /**
   * At startup, run `redlock.checkNodes()` (persistence, eviction policy, clock rate, ACL, ...):
   * `'warn'` logs every warn and error finding, `'fail'` also makes `app.init()` reject with
   * `NodeCheckError` on an error finding, `'off'` skips it (default: it takes about half a second).
   */
  readonly nodeCheck?: NodeCheckMode;
}

/** Module options after defaults were merged: the only shape the rest of the package reads. */
export interface ResolvedRedlockModuleOptions {
  /** The Redis nodes; empty when an `engine` was given. */
  readonly nodes: ReadonlyArray<RedisNodeInput>;
  /** The engine given in the options, when one was (then no Redlock is created). */
  readonly engine?: LockEngine;
  /** What is handed to `new Redlock(nodes, core)`; core defaults are applied there. */
  readonly core: RedlockOptions;
  readonly ttl: number;
  readonly lockedStatus: LockedStatus;
  readonly independenceCheck: IndependenceCheckMode;
  readonly http: Required<RedlockHttpOptions>;
  readonly nodeCheck: NodeCheckMode;
}

/** The single source of the module-level defaults. */
export const DEFAULT_REDLOCK_MODULE_OPTIONS = Object.freeze({
  /** Long enough for most request handlers; the watchdog extends it every ttl/3 anyway. */
  ttl: 10_000,
  lockedStatus: 409,
  /** Replicas and duplicates fail startup; `'off'` is the documented opt-out for ACLs without `+info`. */
  independenceCheck: 'fail',
  nodeCheck: 'off',
  /** `@WithLock` handlers lock when called unless asked for app-wide (a global guard changes every route). */
  http: Object.freeze({ global: false }),
});

/**
 * The rule of `lockedStatus` (module, `@LockRoute`, testing module): 409 or 423.
 *
 * @example
 * ```ts
 * checkLockedStatus(423, '@LockRoute on Carts.update: lockedStatus'); // 423
 * ```
 */
export function checkLockedStatus(status: unknown, what = 'lockedStatus'): LockedStatus {
  if (status !== 409 && status !== 423) throw new RedlockArgumentError(`${what} must be 409 or 423, got ${String(status)}.`);
  return status;
}

/** Merges user options over {@link DEFAULT_REDLOCK_MODULE_OPTIONS} and validates the module-level ones. */
export function resolveModuleOptions(options: RedlockModuleOptions | undefined): ResolvedRedlockModuleOptions {
  if (!options || typeof options !== 'object') {
    throw new RedlockArgumentError('RedlockModule.forRoot() needs options: RedlockModule.forRoot({ nodes: ["redis://host:6379"] }).');
  }
  const { nodes, engine, ttl, lockedStatus, independenceCheck, http, nodeCheck, ...core } = options;
  if (engine !== undefined) checkEngineOptions(engine, nodes, core);
  else if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockArgumentError(
      'RedlockModule options.nodes must list at least one Redis node, e.g. { nodes: ["redis://host:6379"] }, or give a lock engine: { engine: new EtcdLocks({ hosts }) }.',
    );
  }
  const d = DEFAULT_REDLOCK_MODULE_OPTIONS;
  // The core's options by the core's rules, named as the module spells them (Redlock checks them again).
  checkRedlockOptions(core, 'RedlockModule options');
  if (ttl !== undefined) checkTtl(ttl, 'RedlockModule options.ttl');
  if (lockedStatus !== undefined) checkLockedStatus(lockedStatus, 'RedlockModule options.lockedStatus');
  if (independenceCheck !== undefined && !['off', 'warn', 'fail'].includes(independenceCheck)) {
    throw new RedlockArgumentError(
      `RedlockModule options.independenceCheck must be 'off', 'warn' or 'fail', got ${String(independenceCheck)}.`,
    );
  }
  const httpOption: unknown = http; // JavaScript callers can pass anything
  if (
    httpOption !== undefined &&
    (typeof httpOption !== 'object' ||
      httpOption === null ||
      ((httpOption as RedlockHttpOptions).global !== undefined && typeof (httpOption as RedlockHttpOptions).global !== 'boolean'))
  ) {
    throw new RedlockArgumentError(`RedlockModule options.http must be an object like { global: true }, got ${JSON.stringify(http)}.`);
  }
  if (nodeCheck !== undefined && !['off', 'warn', 'fail'].includes(nodeCheck)) {
    throw new RedlockArgumentError(`RedlockModule options.nodeCheck must be 'off', 'warn' or 'fail', got ${String(nodeCheck)}.`);
  }
  return {
    nodes: nodes ?? [],
    ...(engine === undefined ? {} : { engine }),
    core: engine === undefined ? withDeclaredTtl(core, ttl ?? d.ttl) : core,
    ttl: ttl ?? d.ttl,
    lockedStatus: lockedStatus ?? d.lockedStatus,
    independenceCheck: independenceCheck ?? d.independenceCheck,
    http: { global: http?.global ?? d.http.global },
    nodeCheck: nodeCheck ?? d.nodeCheck,
  };
}

/**
 * The module's `ttl` is a TTL in use from the first request on (every `@WithLock` and
 * `@LockRoute` without its own), so the Redlock knows it from its first connection: a node
 * first seen younger than it sits out while an older node shows the set did not start
 * fresh (the restart rule's `declaredTtlMs`). A `restartRule.maxTtlMs` the user set is the
 * strict rule, and `restartRule: false` turns the rule off: both are kept as given.
 */
function withDeclaredTtl(core: RedlockOptions, ttl: number): RedlockOptions {
  const rule = core.restartRule;
  if (rule === false || rule?.maxTtlMs !== undefined) return core;
  return { ...core, restartRule: { ...rule, declaredTtlMs: Math.max(rule?.declaredTtlMs ?? 0, ttl) } };
}

/** An `engine` comes alone: Redis nodes or core Redlock options beside it would be silently ignored. */
function checkEngineOptions(engine: unknown, nodes: unknown, core: object): void {
  const e = engine as Partial<LockEngine> | null;
  if (
    e === null ||
    typeof e !== 'object' ||
    typeof e.acquire !== 'function' ||
    typeof e.using !== 'function' ||
    typeof e.close !== 'function'
  ) {
    throw new RedlockArgumentError(
      `RedlockModule options.engine must be a lock engine (an object with acquire, tryAcquire, using and close, like new EtcdLocks({ hosts })), got ${e === null ? 'null' : typeof e}.`,
    );
  }
  if (nodes !== undefined) {
    throw new RedlockArgumentError('RedlockModule options: give either nodes (Redis) or engine, not both.');
  }
  const ignored = Object.keys(core).filter((k) => (core as Record<string, unknown>)[k] !== undefined);
  if (ignored.length > 0) {
    throw new RedlockArgumentError(
      `RedlockModule options ${ignored.join(', ')} configure the Redis Redlock and do nothing with an engine: pass the engine's own options to its constructor instead.`,
    );
  }
}
