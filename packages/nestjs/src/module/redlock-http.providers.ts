import type { CanActivate, ExecutionContext, Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, ApplicationConfig, Reflector } from '@nestjs/core';
import { LOCK_ROUTE_METADATA, REDLOCK_LOCAL_SERVICE } from '../options/constants.js';
import { RedlockGuard } from '../http/redlock.guard.js';
import { RedlockInterceptor } from '../http/redlock.interceptor.js';
import type { LockServiceBase } from '../service/lock-service.base.js';

/**
 * The guard `http: { global: true }` applies to every route. It locks `@WithLock` handlers
 * only: a `@LockRoute` handler runs its own guard at its declared place (after the guards
 * declared before it, for example the one that sets `request.user` for a `<user.id>` key).
 */
class AppWideRedlockGuard extends RedlockGuard {
  override canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.get<unknown>(LOCK_ROUTE_METADATA, context.getHandler()) !== undefined) return Promise.resolve(true);
    return super.canActivate(context);
  }
}

/** What the module registers without `http.global`: lets every request through. */
const noGuard: CanActivate = { canActivate: () => true };

/**
 * App-wide HTTP enhancers of `RedlockModule`:
 * - `RedlockInterceptor` on every route, always: it runs guarded handlers under their lock, and
 *   turns lock errors thrown by any handler into 409/423 + `Retry-After`, 503 or 400 instead of 500
 *   (it does nothing else on routes without locks, and nothing outside HTTP);
 * - `RedlockGuard` on every route with `http: { global: true }`, so `@WithLock` alone locks before the pipes.
 */
export const redlockHttpProviders: Provider[] = [
  {
    provide: APP_GUARD,
    // This import's own service (the default or a named instance), whatever token it is exported under.
    inject: [REDLOCK_LOCAL_SERVICE, Reflector],
    useFactory: (service: LockServiceBase, reflector: Reflector): CanActivate =>
      service.options.http.global ? new AppWideRedlockGuard(reflector) : noGuard,
  },
  {
    provide: APP_INTERCEPTOR,
    inject: [REDLOCK_LOCAL_SERVICE, Reflector, ApplicationConfig],
    useFactory: (service: LockServiceBase, reflector: Reflector, config: ApplicationConfig) =>
      new RedlockInterceptor(service, reflector, config),
  },
];
