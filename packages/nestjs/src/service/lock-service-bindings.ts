import { RedlockArgumentError } from '@redlock-nest/core';
import { DEFAULT_REDLOCK_NAME } from '../options/constants.js';
import type { LockServiceBase } from './lock-service.base.js';

/** The lock services of one Nest app, by instance name (`RedlockModule.forRoot({ name })`). */
export class AppLockServices {
  private readonly byName = new Map<string, LockServiceBase>();
  private readonly claimed = new Set<'classes' | 'instances'>();
  private readonly classes: object[] = [];

  /** A `RedlockModule` import of this app registers its service (at construction, before any init hook). */
  add(name: string, service: LockServiceBase): void {
    const existing = this.byName.get(name);
    if (existing && existing !== service) {
      const call = name === DEFAULT_REDLOCK_NAME ? 'RedlockModule.forRoot()' : `RedlockModule.forRoot({ name: '${name}' })`;
      throw new RedlockArgumentError(
        `${call} is imported more than once in one app. Import it once (with isGlobal: true to use it everywhere), ` +
          "or give each import its own name: RedlockModule.forRoot({ name: 'payments', nodes: [...] }).",
      );
    }
    this.byName.set(name, service);
  }

  /** The service of instance `name` (default: the unnamed one). */
  get(name: string | undefined): LockServiceBase | undefined {
    return this.byName.get(name ?? DEFAULT_REDLOCK_NAME);
  }

  /** True the first time only: the first `RedlockModule` to get there binds for every instance name. */
  claim(step: 'classes' | 'instances'): boolean {
    if (this.claimed.has(step)) return false;
    this.claimed.add(step);
    return true;
  }

  /** Binds a class (its prototype) to this app, until {@link unbindClasses}. */
  bindClass(proto: object): void {
    if (this.classes.includes(proto)) return;
    bindLockServices(proto, this);
    this.classes.push(proto);
  }

  /** The app shut down: its classes stop pointing at it (its own instances stay bound). */
  unbindClasses(): void {
    for (const proto of this.classes.splice(0)) unbindLockServices(proto, this);
  }
}

/**
 * Which app's lock services an object uses, keyed by the object itself (instances the app's
 * container created) or by a class prototype (instances created later: request-scoped and
 * transient providers, or with `new`). Several apps may share a class: the latest one wins.
 */
const bindings = new WeakMap<object, AppLockServices[]>();

/** Binds `target` (an instance or a class prototype) to `app`. */
export function bindLockServices(target: object, app: AppLockServices): void {
  const list = bindings.get(target);
  if (!list) bindings.set(target, [app]);
  else if (!list.includes(app)) list.push(app);
}

/** Undoes {@link bindLockServices} (the app shut down). */
export function unbindLockServices(target: object, app: AppLockServices): void {
  const list = bindings.get(target);
  const i = list?.indexOf(app) ?? -1;
  if (i >= 0) list!.splice(i, 1);
}

/**
 * The app an object is bound to: the nearest binding on its prototype chain (the instance's own
 * app first, then the latest app that has its class); `get(name)` on it gives the lock service
 * of that name. `undefined` when no app bound it.
 */
export function findAppLockServices(instance: unknown): AppLockServices | undefined {
  for (let o = instance; o !== null && (typeof o === 'object' || typeof o === 'function'); o = Object.getPrototypeOf(o)) {
    const list = bindings.get(o);
    if (list && list.length > 0) return list[list.length - 1];
  }
  return undefined;
}
