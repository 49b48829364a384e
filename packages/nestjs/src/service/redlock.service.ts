import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redlock, type LockEngine } from '@redlock-nest/core';
import { checkIndependenceAtStartup } from './independence-check.js';
import { LockServiceBase } from './lock-service.base.js';
import { logLostLocks } from './lost-lock.logger.js';
import { recentHolds } from './recent-holds.js';
import { runStartupNodeCheck } from './node-check.startup.js';
import { REDLOCK_MODULE_OPTIONS } from '../options/redlock.module-definition.js';
import { resolveModuleOptions, type RedlockModuleOptions, type ResolvedRedlockModuleOptions } from '../options/redlock-options.js';

/**
 * The module's lock engine (a Redlock over its `nodes`, or the `engine` it was given), injectable.
 * `acquire`, `tryAcquire` and `using` are the engine's, with the
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
export class RedlockService extends LockServiceBase<LockEngine> implements OnModuleInit, OnApplicationShutdown {
  /** The lock engine: the core Redlock over `nodes`, or the module's `engine` (closed on application shutdown). */
  override readonly redlock: LockEngine;
  /** The module options in force, defaults merged. */
  override readonly options: ResolvedRedlockModuleOptions;
  private readonly logger = new Logger('Redlock');

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    super();
    this.options = resolveModuleOptions(options);
    this.redlock =
      this.options.engine ??
      new Redlock(this.options.nodes, {
        onWarning: (message) => this.logger.warn(message),
        ...this.options.core,
      });
    logLostLocks(this.redlock, this.logger);
    // Hold times feed the Retry-After of contended requests (redlock-http.exceptions.ts).
    recentHolds.watch(this.redlock);
  }

  /**
   * Startup checks of the engine's servers, when the engine has them: `nodeCheck`, and that the
   * nodes are independent masters (`independenceCheck`, default `'fail'`).
   */
  async onModuleInit(): Promise<void> {
    const engine = this.redlock;
    if (engine.checkNodes) await runStartupNodeCheck(() => engine.checkNodes!(), this.options.nodeCheck, this.logger);
    if (engine.checkIndependence) {
      await checkIndependenceAtStartup(() => engine.checkIndependence!(), this.options.independenceCheck, this.logger);
    }
  }

  /**
   * Releases every lock still held (aborting their signals), stops the watchdogs, then closes the
   * connections the module created; clients passed in stay open. Lets the process exit on its own.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
