import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { LOCK_ROUTE_METADATA, REDLOCK_INSTANCE_NAME, REDLOCK_LOCAL_SERVICE, WITH_LOCK_METADATA } from './constants.js';
import { RedlockModuleNotInitializedError } from './errors.js';
import type { LockCallOptions } from './lock-call-options.js';
import { AppLockServices, bindLockServices, unbindLockServices } from './lock-service-bindings.js';
import { RedlockGuard } from './redlock.guard.js';
import type { LockServiceBase } from './lock-service.base.js';

/** A provider, controller or enhancer of the container. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** The lock services of each running app, found through the app's own container. */
const apps = new WeakMap<ModulesContainer, AppLockServices>();

/**
 * The one way `@WithLock` methods and `RedlockGuard`s find their lock service. Every
 * `RedlockModule` import registers its service in its app's {@link AppLockServices} when
 * constructed; at init, the app's providers, controllers and enhancers are scanned (Nest's
 * `DiscoveryService` + `MetadataScanner`, reading the `@WithLock` / `@LockRoute` metadata, as
 * `@nestjs/schedule` does for `@Cron`). Each instance that locks is bound to the app, and so is
 * its class, for the instances created after bootstrap (request-scoped, transient, `new`).
 * An instance name a decorator asks for that the app does not have fails `app.init()`.
 *
 * The methods are wrapped at decoration time either way; the binding only decides WHICH service
 * a call uses. A call on an instance no app bound rejects with `RedlockModuleNotInitializedError`.
 */
@Injectable()
export class RedlockInstanceBinder implements OnModuleInit, OnApplicationShutdown {
  private readonly app: AppLockServices;
  private readonly boundClasses: object[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly modules: ModulesContainer,
    @Inject(REDLOCK_LOCAL_SERVICE) service: LockServiceBase,
    @Inject(REDLOCK_INSTANCE_NAME) name: string,
  ) {
    let app = apps.get(modules);
    if (!app) apps.set(modules, (app = new AppLockServices()));
    this.app = app;
    app.add(name, service);
  }

  onModuleInit(): void {
    if (!this.app.claimScan()) return;
    // Guards made with `new` (app.useGlobalGuards(new RedlockGuard())) are not in the container.
    this.bindClass(RedlockGuard.prototype);
    const enhancers = [...this.modules.values()].flatMap((m) => [...m.injectables.values()]);
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers(), ...enhancers]) {
      this.bind(wrapper);
    }
  }

  /** Classes stop pointing at this app; its own instances stay bound (their calls fail with RedlockClosedError). */
  onApplicationShutdown(): void {
    for (const proto of this.boundClasses.splice(0)) unbindLockServices(proto, this.app);
  }

  private bind(wrapper: InstanceWrapper): void {
    const instance: unknown = wrapper.instance;
    const isStatic = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
    const proto: unknown =
      isStatic && instance !== null && typeof instance === 'object'
        ? Object.getPrototypeOf(instance)
        : typeof wrapper.metatype === 'function' && !wrapper.inject
          ? (wrapper.metatype as Function).prototype
          : undefined;
    if (proto === null || typeof proto !== 'object') return;
    const names = this.instanceNames(proto);
    if (names.length === 0 && !(proto instanceof RedlockGuard)) return;
    for (const { name, where } of names) {
      if (!this.app.get(name)) throw new RedlockModuleNotInitializedError(where, name, true);
    }
    this.bindClass(proto);
    if (isStatic && instance !== null && typeof instance === 'object') bindLockServices(instance, this.app);
  }

  private bindClass(proto: object): void {
    if (this.boundClasses.includes(proto)) return;
    bindLockServices(proto, this.app);
    this.boundClasses.push(proto);
  }

  /** The Redlock instance names the class's `@WithLock` methods and `@LockRoute` handlers ask for. */
  private instanceNames(proto: object): Array<{ name: string | undefined; where: string }> {
    const found: Array<{ name: string | undefined; where: string }> = [];
    for (const method of this.scanner.getAllMethodNames(proto)) {
      const fn: unknown = (proto as Record<string, unknown>)[method];
      if (typeof fn !== 'function') continue;
      const cls = proto.constructor.name;
      const withLock = Reflect.getMetadata(WITH_LOCK_METADATA, fn) as { options: LockCallOptions } | undefined;
      if (withLock) found.push({ name: withLock.options.redlock, where: `@WithLock on ${cls}.${method}` });
      const route = Reflect.getMetadata(LOCK_ROUTE_METADATA, fn) as { options: LockCallOptions } | undefined;
      if (route) found.push({ name: route.options.redlock, where: `@LockRoute on ${cls}.${method}` });
    }
    return found;
  }
}
