import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { RedlockArgumentError, type Lock, type LockLostReason } from '@redlock-nest/core';
import type { InMemoryRedisServer } from '@redlock-nest/core/testing';
import { checkTimeoutMs, checkTtl } from '@redlock-nest/core/internal';
import { LockServiceBase } from '../service/lock-service.base.js';
import { checkLockedStatus, DEFAULT_REDLOCK_MODULE_OPTIONS, type ResolvedRedlockModuleOptions } from '../options/redlock-options.js';
import { ForeignHold } from './foreign-hold.js';
import { InMemoryRedlock } from './in-memory-redlock.js';
import { DEFAULT_REDLOCK_TESTING_OPTIONS, REDLOCK_TESTING_OPTIONS, type RedlockTestingOptions } from './redlock-testing.options.js';

/** Owner ids of foreign holds: distinct from every real lock's random token. */
let foreignHolds = 0;

/**
 * FOR TESTS ONLY. Replaces `RedlockService` in a testing module: `@WithLock` methods,
 * `@LockRoute` handlers and code injecting `RedlockService` lock in-memory Redis nodes instead
 * of Redis, with the real module's semantics (reentrancy, `onLocked`, `wait`, `currentLock()`,
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
    const nodes: unknown = options.nodes;
    if (nodes !== undefined && (typeof nodes !== 'number' || !Number.isInteger(nodes) || nodes < 1 || nodes > 15)) {
      throw new RedlockArgumentError(
        `RedlockTestingModule options.nodes must be a whole number of in-memory nodes from 1 to 15, got ${JSON.stringify(nodes)}. Leave it out for 3.`,
      );
    }
    const d = DEFAULT_REDLOCK_MODULE_OPTIONS;
    this.redlock = new InMemoryRedlock(
      options.defaultWaitMs ?? DEFAULT_REDLOCK_TESTING_OPTIONS.defaultWaitMs,
      options.nodes ?? DEFAULT_REDLOCK_TESTING_OPTIONS.nodes,
    );
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
    if (!this.redlock.holdAs(resources, owner, ttlMs)) {
      throw new Error(`holdElsewhere(${JSON.stringify(resources)}): already held; release the other hold first.`);
    }
    return new ForeignHold(this.redlock, resources, owner);
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
      await this.redlock.nextHeld(signal);
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
    return this.redlock.isHeld(resource);
  }

  /**
   * Simulates Redis being unreachable (every node down): acquisitions reject with `QuorumUnavailableError`
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

  /**
   * The in-memory lock nodes (3 unless `nodes` says otherwise), to simulate one node's faults:
   * `stop()` (down: connections refused) and `start()`, `slow(ms)` (replies delayed),
   * `restart()` (back empty with a new run id: the restart rule keeps it out of quorums for
   * the largest TTL in use).
   * @example
   * ```ts
   * locks.nodes[0]!.stop();                      // one node down: locks still take 2 of 3
   * expect(await orders.pay('1')).toBe(1n);
   * locks.nodes[1]!.stop();                      // a majority down
   * await expect(orders.pay('2')).rejects.toBeInstanceOf(QuorumUnavailableError);
   * ```
   */
  get nodes(): readonly InMemoryRedisServer[] {
    return this.redlock.servers;
  }

  /** Forgets every lock, foreign hold and fencing counter, and ends simulated faults (nodes down or slow). */
  reset(): void {
    this.redlock.reset();
  }

  /** Releases what is still held. */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
