import type { Observable } from 'rxjs';
import { WITH_LOCK_METADATA } from '../options/constants.js';
import { LockKeyError, RedlockModuleNotInitializedError } from '../errors/errors.js';
import { checkLockCallOptions, type LockCallOptions, type LockedCallOptions } from '../options/lock-call-options.js';
import { compileMethodKey, type LockKey } from '../keys/lock-key.js';
import { findAppLockServices } from '../service/lock-service-bindings.js';
import { lockedCaller } from '../service/locked-call.js';
import { lockedReturnKind } from '../service/locked-result.js';
import { adoptIdentity, unwrap } from '../keys/method-wrapper.js';

/** Options of `@WithLock` (no `permits`: a semaphore is `@WithSemaphore`'s). */
export type WithLockOptions = LockCallOptions;

/** What `@WithLock` recorded on a method (metadata key `WITH_LOCK_METADATA`). */
export interface WithLockDefinition {
  readonly key: LockKey;
  readonly options: LockedCallOptions;
}

/**
 * What `@WithLock` can hold a lock for: a method returning a Promise (held until it settles), an
 * Observable (held from subscription until complete, error or unsubscribe) or an async iterable
 * from an `async *` method (held for the whole iteration). Anything else is a compile-time error.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parameters must stay assignable from any method's (contravariance)
export type LockableMethod = (...args: any[]) => Promise<unknown> | Observable<unknown> | AsyncIterable<unknown>;

/** The decorator `@WithLock(...)` returns: accepts only {@link LockableMethod}s. */
export type WithLockDecorator = <M extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => TypedPropertyDescriptor<M>;

function nameOf(target: object, propertyKey: string | symbol): string {
  const cls = typeof target === 'function' ? target : target.constructor;
  return `${cls.name || 'anonymous class'}.${String(propertyKey)}`;
}

/**
 * Runs the method only while holding a distributed lock on `key`, auto-extended while it runs.
 * Works wherever the method is called from: other code, the HTTP router, `@Cron`, `@OnEvent`,
 * microservice handlers, SSE. The lock is held for as long as the result is being produced:
 * - a method returning a Promise: until it settles;
 * - a method whose declared return type is `Observable<T>`: from each subscription until it
 *   completes, errors or is unsubscribed (acquired lazily, on subscribe; the method itself is
 *   called inside the lock); a lost lock unsubscribes the source and errors with `LockLostError`;
 * - an async generator method (`async *m()`): from the first `next()` until the iteration ends,
 *   including an early `break`, with `currentLock()` working inside the generator body.
 * A result that would be consumed after the release (an Observable from a method not declared
 * to return one, a Node stream, a `StreamableFile`, another async iterable) is refused with
 * `LockedResultError`, never consumed unlocked. Other methods are a compile-time error.
 *
 * Key templates: `<id>` is the parameter named `id`, `<cart.id>` a property path, `<0>` / `<0.id>`
 * a position; a function `(...args) => string | string[]` for anything else; an array locks several
 * keys together. A placeholder naming a missing parameter throws when the class is defined;
 * one that resolves to `undefined`/`null`/`''` throws at call time (nothing is locked or run).
 *
 * Reentrant: a call chain that already holds the key does not acquire it again.
 * Inside, `currentLock()` returns the lock (fencing token, signal). `{ redlock: 'payments' }`
 * locks on the `RedlockModule.forRoot({ name: 'payments' })` instance.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Orders {
 *   @WithLock('order:<id>', { wait: 2_000 })
 *   async pay(id: string) { ... }
 *
 *   @Cron('0 * * * *')
 *   @WithLock('cron:hourly-report', { onLocked: 'skip' })
 *   async hourlyReport() { ... } // runs on one instance per hour
 *
 *   @WithLock((from: Account, to: Account) => [`account:${from.id}`, `account:${to.id}`])
 *   async transfer(from: Account, to: Account, amount: number) { ... }
 *
 *   @MessagePattern('stock.watch')
 *   @WithLock('stock:<sku>', { redlock: 'payments' })
 *   watch(sku: string): Observable<Stock> { ... } // held while subscribed
 *
 *   @WithLock('export:<id>')
 *   async *export(id: string) { yield* this.rows(id); } // held for the whole iteration
 * }
 * ```
 */
export function WithLock(key: LockKey, options?: WithLockOptions): WithLockDecorator {
  return lockedMethod('@WithLock', key, options);
}

/**
 * `@WithLock` and `@WithSemaphore`: the same wrapper, named after the decorator in errors.
 * @internal
 */
export function lockedMethod(decorator: string, key: LockKey, options: unknown): WithLockDecorator {
  return (target, propertyKey, descriptor) => {
    const where = nameOf(target, propertyKey);
    const original: unknown = descriptor.value;
    if (typeof original !== 'function') {
      throw new LockKeyError(`${decorator} on ${where}: it decorates methods only (not getters, setters or properties).`);
    }
    const opts = checkLockCallOptions(options, `${decorator} on ${where}`, decorator === '@WithSemaphore');
    const resolveKey = compileMethodKey(key, unwrap(original), where);
    const kind = lockedReturnKind(unwrap(original), target, propertyKey);
    const label = `${decorator} on ${where}`;

    const call = lockedCaller(kind, {
      options: opts,
      where: label,
      service: (instance) => {
        const app = findAppLockServices(instance);
        const service = app?.get(opts.redlock);
        if (!service) throw new RedlockModuleNotInitializedError(label, opts.redlock, app !== undefined);
        return service;
      },
      resources: resolveKey,
      method: original as (...args: unknown[]) => unknown,
    });
    const wrapper = function (this: unknown, ...args: unknown[]): unknown {
      return call(this, args);
    };
    adoptIdentity(wrapper, original);
    // Read back by the module's discovery at bootstrap (RedlockInstanceBinder).
    Reflect.defineMetadata(WITH_LOCK_METADATA, { key, options: opts } satisfies WithLockDefinition, wrapper);
    descriptor.value = wrapper as typeof descriptor.value;
    return descriptor;
  };
}
