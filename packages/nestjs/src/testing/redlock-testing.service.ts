import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { checkTimeoutMs, checkTtl, type Lock, type LockLostReason } from '@redlock-nest/core';
import { LockServiceBase } from '../lock-service.base.js';
import { checkLockedStatus, DEFAULT_REDLOCK_MODULE_OPTIONS, type ResolvedRedlockModuleOptions } from '../redlock-options.js';
import { ForeignHold } from './foreign-hold.js';
import { InMemoryRedlock } from './in-memory-redlock.js';
import { DEFAULT_REDLOCK_TESTING_OPTIONS, REDLOCK_TESTING_OPTIONS, type RedlockTestingOptions } from './redlock-testing.options.js';

/** Owner ids of foreign holds: distinct from every real lock's random token. */
let foreignHolds = 0;

/**
 * FOR TESTS ONLY. Replaces `RedlockService` in a testing module: `@WithLock` methods,
 * `@LockRoute` handlers and code injecting `RedlockService` lock an in-process table instead of
 * Redis, with the real module's semantics (reentrancy, `onLocked`, `wait`, `currentLock()`,
 * fencing tokens, lost-lock signal). Helpers simulate other instances holding a lock, a lost lock
 * and a Redis outage, so each branch of your code can be tested without Redis or timing.
 *
 * @example
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot()],
 *   providers: [ReportJob],
 * }).compile();
 * await moduleRef.init();
 * const locks = moduleRef.get(RedlockTestingService);
 *
 * const other = locks.holdElsewhere('cron:report');         // another instance runs it
 * expect(await moduleRef.get(ReportJob).run()).toBeUndefined(); // onLocked: 'skip'
 * other.release();
 * ```
 */
@Injectable()
export class RedlockTestingService extends LockServiceBase<InMemoryRedlock> implements OnApplicationShutdown {
  /** The in-memory stand-in for the core Redlock. */
  override readonly redlock: InMemoryRedlock;
  /** The module options `@WithLock` and `@LockRoute` read (`ttl`, `lockedStatus`). */
  override readonly options: ResolvedRedlockModuleOptions;

  constructor(@Inject(REDLOCK_TESTING_OPTIONS) options: RedlockTestingOptions) {
    super();
    // The real module's rules, so a test with a setting production would refuse fails too.
    if (options.ttl !== undefined) checkTtl(options.ttl, 'RedlockTestingModule options.ttl');
    if (options.lockedStatus !== undefined) checkLockedStatus(options.lockedStatus, 'RedlockTestingModule options.lockedStatus');
    if (options.defaultWaitMs !== undefined) checkTimeoutMs(options.defaultWaitMs, 'RedlockTestingModule options.defaultWaitMs');
    const d = DEFAULT_REDLOCK_MODULE_OPTIONS;
    this.redlock = new InMemoryRedlock(options.defaultWaitMs ?? DEFAULT_REDLOCK_TESTING_OPTIONS.defaultWaitMs);
    this.options = {
      nodes: [],
      core: {},
      ttl: options.ttl ?? d.ttl,
      lockedStatus: options.lockedStatus ?? d.lockedStatus,
      independenceCheck: 'off',
      http: d.http,
      nodeCheck: 'off',
    };
  }

  /**
   * Makes `resource` (or all of `resource[]`) held by another instance until the returned hold is
   * released (or `ttlMs` passes). Your code's acquisitions then see contention.
   * @example
   * ```ts
   * const other = locks.holdElsewhere('order:1');
   * await expect(orders.pay('1')).rejects.toBeInstanceOf(LockNotAcquiredError);
   * other.release();
   * ```
   */
  holdElsewhere(resource: string | readonly string[], ttlMs = 60_000): ForeignHold {
    const resources = typeof resource === 'string' ? [resource] : [...resource];
    const owner = `elsewhere#${++foreignHolds}`;
    const taken = this.redlock.table.take(resources, owner, ttlMs);
    if (!taken.ok) throw new Error(`holdElsewhere(${JSON.stringify(resources)}): already held; release the other hold first.`);
    return new ForeignHold(this.redlock.table, resources, owner);
  }

  /**
   * Simulates losing the lock your code holds on `resource` (it expired and someone else may
   * have it): `currentLock().signal` aborts with a `LockLostError` of `reason`, and the locked
   * call rejects with it when it returns. Returns false when nothing holds `resource`.
   * @example
   * ```ts
   * const call = orders.longExport('7');
   * await locks.whenHeld('export:7');
   * locks.loseLock('export:7');
   * await expect(call).rejects.toBeInstanceOf(LockLostError);
   * ```
   */
  loseLock(resource: string, reason: LockLostReason = 'not-owner'): boolean {
    return this.redlock.lose(resource, reason);
  }

  /**
   * Resolves once your code holds `resource` (immediately if it already does): the event to
   * await before {@link loseLock} or before asserting on a call that is mid-way.
   * @example
   * ```ts
   * const call = job.run();
   * const lock = await locks.whenHeld('cron:report');
   * ```
   */
  async whenHeld(resource: string, signal?: AbortSignal): Promise<Lock> {
    for (;;) {
      const lock = this.redlock.heldLock(resource);
      if (lock) return lock;
      signal?.throwIfAborted();
      await this.redlock.table.changed(signal);
    }
  }

  /**
   * Whether anyone (your code or a foreign hold) holds `resource` now.
   * @example
   * ```ts
   * expect(locks.isLocked('order:1')).toBe(false); // released after the call
   * ```
   */
  isLocked(resource: string): boolean {
    return this.redlock.table.owner(resource) !== undefined;
  }

  /**
   * Simulates Redis being unreachable: acquisitions reject with `QuorumUnavailableError`
   * (a `@LockRoute` answers 503) until called again with `false`.
   * @example
   * ```ts
   * locks.setUnavailable(true);
   * await request(app.getHttpServer()).post('/orders/1/pay').expect(503);
   * ```
   */
  setUnavailable(unavailable = true): void {
    this.redlock.unavailable = unavailable;
  }

  /** Forgets every entry, foreign hold and fencing counter, and ends a simulated outage. */
  reset(): void {
    this.redlock.unavailable = false;
    this.redlock.table.clear();
  }

  /** Releases what is still held. */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
