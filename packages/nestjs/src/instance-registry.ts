import { REDLOCK_SERVICE_BINDING } from './constants.js';

/**
 * Finds the lock service for an instance at call time: first the service the module bound to
 * that instance (one app's providers and controllers, even with several apps in one process),
 * then the most recently started service of the process (instances made with `new`,
 * request-scoped providers).
 */
export class InstanceRegistry<T extends object> {
  private readonly open: T[] = [];

  /** A service became usable. */
  add(service: T): void {
    if (!this.open.includes(service)) this.open.push(service);
  }

  /** A service is shutting down: instances made with `new` fall back to an older one, or fail. */
  delete(service: T): void {
    const i = this.open.indexOf(service);
    if (i >= 0) this.open.splice(i, 1);
  }

  /** Binds `instance` to `service` through a hidden, non-enumerable symbol property. */
  bind(instance: object, service: T): void {
    Object.defineProperty(instance, REDLOCK_SERVICE_BINDING, { value: service, configurable: true, writable: true, enumerable: false });
  }

  /** The service for `instance`, or undefined when no module is initialised. */
  lookup(instance: unknown): T | undefined {
    const bound =
      instance !== null && (typeof instance === 'object' || typeof instance === 'function')
        ? ((instance as Record<symbol, unknown>)[REDLOCK_SERVICE_BINDING] as T | undefined)
        : undefined;
    // A bound service that closed stays bound: its calls fail with RedlockClosedError rather
    // than silently locking on another app's Redis.
    if (bound) return bound;
    return this.open[this.open.length - 1];
  }
}
