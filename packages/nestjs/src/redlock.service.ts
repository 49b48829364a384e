import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  LockNotAcquiredError,
  NodeIndependenceError,
  Redlock,
  type AcquireOptions,
  type Lock,
  type UsingOptions,
} from '@redlock-nest/core';
import { FencingUnavailableError } from './errors.js';
import { InstanceRegistry } from './instance-registry.js';
import { logLostLocks } from './lost-lock.logger.js';
import { toUsingOptions, type LockCallOptions } from './lock-call-options.js';
import { heldResources, heldWithoutFencing, runInLockContext } from './lock-context.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
import { resolveModuleOptions, type RedlockModuleOptions, type ResolvedRedlockModuleOptions } from './redlock-options.js';

/** Process-wide: which service a `@WithLock` call uses (see {@link InstanceRegistry}). */
export const redlockServices = new InstanceRegistry<RedlockService>();

/**
 * The module's Redlock, injectable. `acquire`, `tryAcquire` and `using` are the core's, with the
 * module's default TTL; `using` also runs its routine in the lock context, so `currentLock()`
 * works inside and a `@WithLock` on the same key is reentrant.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Payments {
 *   constructor(private readonly locks: RedlockService) {}
 *   charge(orderId: string) {
 *     return this.locks.using(`order:${orderId}`, 10_000, (lock) => this.gateway.charge(orderId, lock.signal));
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlockService implements OnModuleInit, OnApplicationShutdown {
  /** The underlying core Redlock (closed on application shutdown). */
  readonly redlock: Redlock;
  /** The module options in force, defaults merged. */
  readonly options: ResolvedRedlockModuleOptions;
  private readonly logger = new Logger('Redlock');

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    this.options = resolveModuleOptions(options);
    this.redlock = new Redlock(this.options.nodes, {
      onWarning: (message) => this.logger.warn(message),
      ...this.options.core,
    });
    logLostLocks(this.redlock, this.logger);
    // Registered at construction, not at init: another module's onModuleInit may already call a locked method.
    redlockServices.add(this);
  }

  /**
   * Acquires `resource` (or all of `resource[]` together) for `ttlMs` (default: the module's `ttl`).
   * @see Redlock.acquire
   * @example
   * ```ts
   * const lock = await this.locks.acquire('order:42');
   * try { ... } finally { await lock.release(); }
   * ```
   */
  acquire(resource: string | readonly string[], ttlMs?: number, options?: AcquireOptions): Promise<Lock> {
    return this.redlock.acquire(resource, ttlMs ?? this.options.ttl, options);
  }

  /**
   * One attempt: the lock, or `null` when someone else holds it.
   * @see Redlock.tryAcquire
   * @example
   * ```ts
   * const lock = await this.locks.tryAcquire('cron:cleanup', 60_000);
   * if (!lock) return;
   * ```
   */
  tryAcquire(resource: string | readonly string[], ttlMs?: number, options?: AcquireOptions): Promise<Lock | null> {
    return this.redlock.tryAcquire(resource, ttlMs ?? this.options.ttl, options);
  }

  /**
   * Runs `routine` holding the lock, auto-extended, inside the lock context.
   * @see Redlock.using
   * @example
   * ```ts
   * await this.locks.using('account:7', 5_000, async (lock) => debit(7, { signal: lock.signal }));
   * ```
   */
  using<T>(
    resource: string | readonly string[],
    ttlMs: number | undefined,
    routine: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T> {
    return this.redlock.using(
      resource,
      ttlMs ?? this.options.ttl,
      (lock) => runInLockContext(lock, this.redlock, () => routine(lock)),
      options,
    );
  }

  /**
   * Runs `body` under a lock on `resources` the way `@WithLock` does: keys this call chain already
   * holds are not acquired again (reentrancy), `onLocked: 'skip'` resolves `undefined` when the
   * key is busy, and the lock is extended while `body` runs.
   */
  async runLocked<T>(
    resources: readonly string[],
    options: LockCallOptions,
    body: () => T | Promise<T>,
    where = 'A locked call',
  ): Promise<T | undefined> {
    if (options.fencing) {
      const unfenced = heldWithoutFencing(this.redlock, resources);
      if (unfenced.length > 0) throw new FencingUnavailableError(where, unfenced);
    }
    const held = heldResources(this.redlock, resources);
    const missing = resources.filter((r) => !held.has(r));
    if (missing.length === 0) return body();
    let entered = false;
    try {
      return await this.using(
        missing,
        options.ttl,
        () => {
          entered = true;
          return body();
        },
        toUsingOptions(options),
      );
    } catch (err) {
      // Only contention on OUR acquisition is skipped; the same error thrown by the body propagates.
      if (!entered && options.onLocked === 'skip' && err instanceof LockNotAcquiredError) return undefined;
      throw err;
    }
  }

  /** Optional startup check that the nodes are independent masters (module option `independenceCheck`). */
  async onModuleInit(): Promise<void> {
    const mode = this.options.independenceCheck;
    if (mode === 'off') return;
    try {
      const reports = await this.redlock.checkIndependence();
      const unreachable = reports.filter((r) => !r.reachable);
      if (unreachable.length > 0) {
        this.logger.warn(
          `Independence check could not reach ${unreachable.map((r) => `${r.node} (${r.error ?? 'no answer'})`).join(', ')}; ` +
            'locks need a majority of the nodes up.',
        );
      }
    } catch (err) {
      if (mode === 'fail' || !(err instanceof NodeIndependenceError)) throw err;
      this.logger.warn(err.message);
    }
  }

  /**
   * Releases every lock still held (aborting their signals), stops the watchdogs, then closes the
   * connections the module created; clients passed in stay open. Lets the process exit on its own.
   */
  async onApplicationShutdown(): Promise<void> {
    redlockServices.delete(this);
    await this.redlock.close();
  }
}
