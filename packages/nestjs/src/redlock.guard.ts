import { BadRequestException, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { LockNotAcquiredError, QuorumUnavailableError } from '@redlock-nest/core';
import { LOCK_ROUTE_METADATA, ROUTE_LOCK_HOLD } from './constants.js';
import { LockKeyError, LockRouteContextError, RedlockModuleNotInitializedError } from './errors.js';
import { onResponseClose, setResponseHeader } from './http-response.js';
import { toUsingOptions } from './lock-call-options.js';
import type { LockRouteDefinition } from './lock-route.decorator.js';
import { LockConflictException, LockUnavailableException, retryAfterSeconds } from './redlock-http.exceptions.js';
import type { LockServiceBase } from './lock-service.base.js';
import { findAppLockServices } from './lock-service-bindings.js';
import { RouteLockHold } from './route-lock.hold.js';

/**
 * Acquires a `@LockRoute` handler's lock before the handler (and its pipes) run, or rejects fast:
 * {@link LockConflictException} (409/423, with `Retry-After` when the holder's remaining TTL is
 * known) when contended, {@link LockUnavailableException} (503) without a Redis quorum, 400 when
 * the request lacks a key value. The held lock is handed to {@link RedlockInterceptor}.
 * Override the `protected` methods to change how keys, options or errors are derived.
 * Applied by `@LockRoute`; use it directly only through a subclass.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class TenantLockGuard extends RedlockGuard {
 *   // Lock per tenant as well as per order.
 *   protected override resolveResources(route: LockRouteDefinition, request: any, context: ExecutionContext) {
 *     return [...super.resolveResources(route, request, context), `tenant:${request.headers['x-tenant']}`];
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlockGuard implements CanActivate {
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const route = this.routeDefinition(context);
    if (!route) return true;
    // Never run a @LockRoute handler unlocked because it was reached some other way.
    if (context.getType() !== 'http') {
      throw new LockRouteContextError(`${context.getClass().name}.${context.getHandler().name}`, context.getType());
    }
    const http = context.switchToHttp();
    const request = http.getRequest<Record<symbol, unknown>>();
    const response = http.getResponse<unknown>();
    if (request[ROUTE_LOCK_HOLD]) return true; // already locked for this request (guard applied twice)
    const service = this.lockService(context);
    const resources = this.resolveResources(route, request, context);

    // A client that gives up while we wait for the lock stops the wait.
    const abort = new AbortController();
    const stopWatching = onResponseClose(response, () => abort.abort(new Error('client closed the request')));
    let hold: RouteLockHold;
    try {
      hold = await RouteLockHold.acquire(service.redlock, resources, route.options.ttl ?? service.options.ttl, {
        ...toUsingOptions({ ...route.options, wait: route.options.wait ?? false }),
        signal: abort.signal,
      });
    } catch (err) {
      throw this.toHttpException(err, resources, route, service, response);
    } finally {
      stopWatching();
    }
    request[ROUTE_LOCK_HOLD] = hold;
    // If the interceptor never runs (a later guard rejected, the client left), the response's end releases.
    onResponseClose(response, () => {
      if (!hold.isClaimed) void hold.release();
    });
    return true;
  }

  /** The `@LockRoute` definition of the handler, if any. */
  protected routeDefinition(context: ExecutionContext): LockRouteDefinition | undefined {
    return Reflect.getMetadata(LOCK_ROUTE_METADATA, context.getHandler()) as LockRouteDefinition | undefined;
  }

  /** The resources to lock for this request; a missing key value is the client's fault (400). */
  protected resolveResources(route: LockRouteDefinition, request: unknown, context: ExecutionContext): string[] {
    try {
      return route.resolve(request, context);
    } catch (err) {
      if (err instanceof LockKeyError) throw new BadRequestException(err.message, { cause: err });
      throw err;
    }
  }

  /**
   * The lock service of the route's `redlock` instance (default: the unnamed one), found through
   * the app that created this guard (see RedlockInstanceBinder), like `@WithLock` methods do.
   */
  protected lockService(context: ExecutionContext): LockServiceBase {
    const name = this.routeDefinition(context)?.options.redlock;
    const app = findAppLockServices(this);
    const service = app?.get(name);
    if (!service) {
      throw new RedlockModuleNotInitializedError(`@LockRoute on ${context.getClass().name}.${context.getHandler().name}`, name, app !== undefined);
    }
    return service;
  }

  /** Maps acquisition failures to HTTP exceptions and sets `Retry-After` (seconds, rounded up). */
  protected toHttpException(
    err: unknown,
    resources: readonly string[],
    route: LockRouteDefinition,
    service: LockServiceBase,
    response: unknown,
  ): unknown {
    if (err instanceof LockNotAcquiredError) {
      const seconds = retryAfterSeconds(err);
      if (seconds !== undefined) setResponseHeader(response, 'Retry-After', String(seconds));
      return new LockConflictException(resources, route.options.lockedStatus ?? service.options.lockedStatus, seconds, err);
    }
    if (err instanceof QuorumUnavailableError) return new LockUnavailableException(resources, err);
    return err;
  }
}
