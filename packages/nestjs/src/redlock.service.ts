import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redlock } from '@redlock-nest/core';
import { checkIndependenceAtStartup } from './independence-check.js';
import { LockServiceBase } from './lock-service.base.js';
import { logLostLocks } from './lost-lock.logger.js';
import { runStartupNodeCheck } from './node-check.startup.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
import { resolveModuleOptions, type RedlockModuleOptions, type ResolvedRedlockModuleOptions } from './redlock-options.js';

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
export class RedlockService extends LockServiceBase<Redlock> implements OnModuleInit, OnApplicationShutdown {
  /** The underlying core Redlock (closed on application shutdown). */
  override readonly redlock: Redlock;
  /** The module options in force, defaults merged. */
  override readonly options: ResolvedRedlockModuleOptions;
  private readonly logger = new Logger('Redlock');

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    super();
    this.options = resolveModuleOptions(options);
    this.redlock = new Redlock(this.options.nodes, {
      onWarning: (message) => this.logger.warn(message),
      ...this.options.core,
    });
    logLostLocks(this.redlock, this.logger);
  }

  /** Startup check that the nodes are independent masters (module option `independenceCheck`, default `'fail'`). */
  async onModuleInit(): Promise<void> {
    await runStartupNodeCheck(this.redlock, this.options.nodeCheck, this.logger);
    await checkIndependenceAtStartup(this.redlock, this.options.independenceCheck, this.logger);
  }

  /**
   * Releases every lock still held (aborting their signals), stops the watchdogs, then closes the
   * connections the module created; clients passed in stay open. Lets the process exit on its own.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
