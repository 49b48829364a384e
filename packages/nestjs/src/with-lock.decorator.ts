import { HAS_LOCKED_METHODS, WITH_LOCK_METADATA } from './constants.js';
import { LockKeyError, RedlockModuleNotInitializedError } from './errors.js';
import { checkLockCallOptions, type LockCallOptions } from './lock-call-options.js';
import { compileMethodKey, type LockKey } from './lock-key.js';
import { adoptIdentity, unwrap } from './method-wrapper.js';
import { redlockServices } from './redlock.service.js';

/** Options of `@WithLock`. */
export type WithLockOptions = LockCallOptions;

/** What `@WithLock` recorded on a method (metadata key `WITH_LOCK_METADATA`). */
export interface WithLockDefinition {
  readonly key: LockKey;
  readonly options: WithLockOptions;
}

function nameOf(target: object, propertyKey: string | symbol): string {
  const cls = typeof target === 'function' ? target : target.constructor;
  return `${cls.name || 'anonymous class'}.${String(propertyKey)}`;
}

/**
 * Runs the method only while holding a distributed lock on `key`, auto-extended while it runs.
 * Works wherever the method is called from: other code, the HTTP router, `@Cron`, `@OnEvent`,
 * microservice handlers. The method then always returns a Promise.
 *
 * Key templates: `<id>` is the parameter named `id`, `<cart.id>` a property path, `<0>` / `<0.id>`
 * a position; a function `(...args) => string | string[]` for anything else; an array locks several
 * keys together. A placeholder naming a missing parameter throws when the class is defined;
 * one that resolves to `undefined`/`null`/`''` throws at call time (nothing is locked or run).
 *
 * Reentrant: a call chain that already holds the key does not acquire it again.
 * Inside, `currentLock()` returns the lock (fencing token, signal).
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
 * }
 * ```
 */
export function WithLock(key: LockKey, options?: WithLockOptions): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const where = nameOf(target, propertyKey);
    const original: unknown = descriptor.value;
    if (typeof original !== 'function') {
      throw new LockKeyError(`@WithLock on ${where}: it decorates methods only (not getters, setters or properties).`);
    }
    const opts = checkLockCallOptions(options, `@WithLock on ${where}`);
    const resolveKey = compileMethodKey(key, unwrap(original), where);

    const wrapper = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const service = redlockServices.lookup(this);
      if (!service) return Promise.reject(new RedlockModuleNotInitializedError(`@WithLock on ${where}`));
      let resources: string[];
      try {
        resources = resolveKey(args);
      } catch (err) {
        return Promise.reject(err);
      }
      return service.runLocked(resources, opts, (): unknown => original.apply(this, args), `@WithLock on ${where}`);
    };
    adoptIdentity(wrapper, original);
    Reflect.defineMetadata(WITH_LOCK_METADATA, { key, options: opts } satisfies WithLockDefinition, wrapper);
    // Tells the module's discovery which instances to bind to their app's service.
    if (!Object.prototype.hasOwnProperty.call(target, HAS_LOCKED_METHODS)) {
      Object.defineProperty(target, HAS_LOCKED_METHODS, { value: true, enumerable: false });
    }
    descriptor.value = wrapper as typeof descriptor.value;
    return descriptor;
  };
}
