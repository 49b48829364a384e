import { LockNotAcquiredError, primitiveOf, type AcquireOptions, type Lock, type LockEngine, type UsingOptions } from '@redlock-nest/core';
import { usingOptionsOf, type LockedCallOptions } from '../options/lock-call-options.js';
import { fenceHeldWithoutFencing, heldResources, inLockContext, runWithLockContext } from './lock-context.js';
import { covers, upgradeRefused, wantedPrimitive } from './lock-primitive.js';
import type { ResolvedRedlockModuleOptions } from '../options/redlock-options.js';

/**
 * The behaviour `@WithLock`, `@LockRoute` and users see of a lock service, written once for
 * the real `RedlockService` and the testing module's stand-in: the module's default TTL,
 * the lock context (`currentLock()`, reentrancy) and `onLocked` handling.
 */
export abstract class LockServiceBase<E extends LockEngine = LockEngine> {
  /** The engine that locks: the core Redlock, another `LockEngine` (etcd), or the testing module's in-memory one. */
  abstract readonly redlock: E;
  /** The module options in force, defaults merged. */
  abstract readonly options: ResolvedRedlockModuleOptions;

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
   * Runs `routine` holding the lock, auto-extended, inside the lock context (so `currentLock()`
   * works and a `@WithLock` on the same key inside is reentrant).
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
    return this.redlock.using(resource, ttlMs ?? this.options.ttl, (lock) => runWithLockContext(lock, this.redlock, routine), options);
  }

  /**
   * Runs `body` under a lock on `resources` the way `@WithLock` does: keys this call chain already
   * holds are not acquired again (reentrancy), `onLocked: 'skip'` resolves `undefined` when the
   * key is busy, and the lock is extended while `body` runs. A fenced call under an unfenced
   * outer lock gives that lock a fresh fencing token (`Lock.fence()`) and reuses it. `signal`
   * aborts a wait for the lock.
   */
  runLocked<T>(
    resources: readonly string[],
    options: LockedCallOptions,
    body: () => T | Promise<T>,
    // Names the call in the error refusing a read-to-write upgrade.
    where = 'A locked call',
    signal?: AbortSignal,
  ): Promise<T | undefined> {
    // Under an unfenced outer hold, a fenced call gets a fresh token for the lock already held.
    if (options.fencing && inLockContext()) {
      return fenceHeldWithoutFencing(this.redlock, resources).then(() => this.runLockedNow(resources, options, body, where, signal));
    }
    return this.runLockedNow(resources, options, body, where, signal);
  }

  /**
   * {@link runLocked} once fencing tokens are in place. Not `async`: the common call (nothing held
   * yet) goes straight to `using()` with the options derived once per decoration, one promise
   * layer above it.
   */
  private runLockedNow<T>(
    resources: readonly string[],
    options: LockedCallOptions,
    body: () => T | Promise<T>,
    where: string,
    signal: AbortSignal | undefined,
  ): Promise<T | undefined> {
    let missing = resources;
    if (inLockContext()) {
      try {
        const wanted = wantedPrimitive(options);
        const held = heldResources(this.redlock, resources, (lock) => covers(lock, wanted));
        missing = resources.filter((r) => !held.has(r));
        const reading = heldResources(this.redlock, missing, (lock) => primitiveOf(lock) === 'read');
        if (wanted !== 'semaphore' && wanted !== 'read' && reading.size > 0) throw upgradeRefused([...reading], where);
        if (missing.length === 0) return Promise.resolve(body());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    // Widened: TypeScript does not see the callback below set it, and would narrow it to `false`.
    let entered = false as boolean;
    const using = usingOptionsOf(options);
    let locked: Promise<T>;
    try {
      locked = this.using(
        missing,
        options.ttl,
        () => {
          entered = true;
          return body();
        },
        signal ? { ...using, signal } : using,
      );
    } catch (err) {
      // An override of using() that throws instead of rejecting still rejects here, as before.
      locked = Promise.reject(err);
    }
    return locked.then(undefined, (err: unknown) => {
      // Only contention on OUR acquisition is skipped; the same error thrown by the body propagates.
      if (!entered && options.onLocked === 'skip' && err instanceof LockNotAcquiredError) return undefined;
      // The hint names this API's option (`wait`), not the core's timeoutMs.
      throw !entered && err instanceof LockNotAcquiredError ? err.forWaitOption('wait') : err;
    });
  }
}
