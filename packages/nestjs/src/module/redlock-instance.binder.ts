import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { LOCK_ROUTE_METADATA, REDLOCK_INSTANCE_NAME, REDLOCK_LOCAL_SERVICE, WITH_LOCK_METADATA } from '../options/constants.js';
import { RedlockModuleNotInitializedError } from '../errors/errors.js';
import type { LockCallOptions, LockedCallOptions } from '../options/lock-call-options.js';
import type { AnyMethod } from '../keys/method-wrapper.js';
import { AppLockServices, bindLockServices } from '../service/lock-service-bindings.js';
import { RedlockGuard } from '../http/redlock.guard.js';
import type { LockServiceBase } from '../service/lock-service.base.js';
import { declareLockTtls, type LockDeclaration } from './declared-ttls.js';

/** A provider, controller or enhancer of the container. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** The lock services of each running app, found through the app's own container. */
const apps = new WeakMap<ModulesContainer, AppLockServices>();

/**
 * The one way `@WithLock` methods and `RedlockGuard`s find their lock service. Every
 * `RedlockModule` import registers its service in its app's {@link AppLockServices}. The app's
 * providers, controllers and enhancers are found with Nest's `DiscoveryService` and
 * `MetadataScanner`, reading the `@WithLock` / `@LockRoute` metadata (as `@nestjs/schedule` does
 * for `@Cron`): when the module is constructed, each class that locks is bound to the app (for
 * instances created later: request-scoped, transient, `new`, and calls made before init); at
 * init, each instance the container created is bound too (several apps in one process then
 * each use their own), and an instance name a decorator asks for that the app lacks fails `app.init()`.
 *
 * The methods are wrapped at decoration time either way; the binding only decides WHICH service
 * a call uses. A call on an object no app bound rejects with `RedlockModuleNotInitializedError`.
 *
 * The same scan gives each import's lock engine the TTLs its decorators declare (`ttl` of
 * `@WithLock`, `@WithSemaphore`, `@LockRoute`), before the first lock: the restart rule's
 * largest TTL in use (see declared-ttls.ts).
 */
@Injectable()
export class RedlockInstanceBinder implements OnModuleInit, OnApplicationShutdown {
  private readonly app: AppLockServices;
  private readonly logger = new Logger('Redlock');
  /** Declarations whose TTL above a configured restartRule.maxTtlMs was logged already. */
  private readonly warned = new Set<string>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly modules: ModulesContainer,
    @Inject(REDLOCK_LOCAL_SERVICE) private readonly service: LockServiceBase,
    @Inject(REDLOCK_INSTANCE_NAME) private readonly name: string,
  ) {
    let app = apps.get(modules);
    if (!app) apps.set(modules, (app = new AppLockServices()));
    this.app = app;
    app.add(name, service);
    // Every import declares its own instance's TTLs; the first one also binds the classes.
    const binds = app.claim('classes');
    // Guards made with `new` (app.useGlobalGuards(new RedlockGuard())) are not in the container.
    if (binds) app.bindClass(RedlockGuard.prototype);
    // The container is complete (scanned) but not all instances exist yet: classes only.
    for (const wrapper of this.wrappers()) {
      const proto = classPrototype(wrapper);
      if (!proto) continue;
      const found = this.declarations(proto);
      this.declare(found);
      if (binds && this.locks(proto, found)) app.bindClass(proto);
    }
  }

  onModuleInit(): void {
    const binds = this.app.claim('instances');
    for (const wrapper of this.wrappers()) {
      const instance: unknown = wrapper.instance;
      const isStatic = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
      const own = isStatic && instance !== null && typeof instance === 'object' ? instance : undefined;
      const proto: unknown = own ? Object.getPrototypeOf(own) : classPrototype(wrapper);
      if (proto === null || typeof proto !== 'object') continue;
      const found = this.declarations(proto);
      // Factory providers show their class only now, in the instance.
      this.declare(found);
      if (!binds || !this.locks(proto, found)) continue;
      for (const { name, where } of found) {
        if (!this.app.get(name)) throw new RedlockModuleNotInitializedError(where, name, true);
      }
      this.app.bindClass(proto);
      if (own) bindLockServices(own, this.app);
    }
  }

  /** Classes stop pointing at this app; its own instances stay bound (their calls fail with RedlockClosedError). */
  onApplicationShutdown(): void {
    this.app.unbindClasses();
  }

  private wrappers(): InstanceWrapper[] {
    const enhancers = [...this.modules.values()].flatMap((m) => [...m.injectables.values()]);
    return [...this.discovery.getProviders(), ...this.discovery.getControllers(), ...enhancers];
  }

  /** Whether instances of `proto` look up a lock service: `@WithLock` / `@LockRoute` methods (`found`), or a guard. */
  private locks(proto: object, found: readonly LockDeclaration[]): boolean {
    return proto === RedlockGuard.prototype || proto instanceof RedlockGuard || found.length > 0;
  }

  private declare(found: readonly LockDeclaration[]): void {
    declareLockTtls(this.service, this.name, found, this.logger, this.warned);
  }

  /** The locks the class's `@WithLock` / `@WithSemaphore` methods and `@LockRoute` handlers declare. */
  private declarations(proto: object): LockDeclaration[] {
    const found: LockDeclaration[] = [];
    for (const method of this.scanner.getAllMethodNames(proto)) {
      const fn: unknown = (proto as Record<string, unknown>)[method];
      if (typeof fn !== 'function') continue;
      const cls = proto.constructor.name;
      const withLock = Reflect.getMetadata(WITH_LOCK_METADATA, fn) as { options: LockedCallOptions } | undefined;
      if (withLock) {
        const { redlock, ttl, permits } = withLock.options;
        found.push({ name: redlock, where: `${permits === undefined ? '@WithLock' : '@WithSemaphore'} on ${cls}.${method}`, ttl });
      }
      const route = Reflect.getMetadata(LOCK_ROUTE_METADATA, fn) as { options: LockCallOptions } | undefined;
      if (route) found.push({ name: route.options.redlock, where: `@LockRoute on ${cls}.${method}`, ttl: route.options.ttl });
    }
    return found;
  }
}

/** The prototype of a class provider (not of a factory or value, whose class shows only in the instance). */
function classPrototype(wrapper: InstanceWrapper): object | undefined {
  return typeof wrapper.metatype === 'function' && !wrapper.inject ? ((wrapper.metatype as AnyMethod).prototype as object) : undefined;
}
