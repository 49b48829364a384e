import {
  BadRequestException,
  Inject,
  Injectable,
  Optional,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { LockNotAcquiredError, type UsingOptions } from '@redlock-nest/core';
import { LOCK_ROUTE_METADATA, WITH_LOCK_METADATA } from './constants.js';
import { LockKeyError, LockRouteContextError, RedlockModuleNotInitializedError } from './errors.js';
import { onResponseClose } from './http-response.js';
import { toUsingOptions, type LockCallOptions } from './lock-call-options.js';
import { compileRouteKey } from './lock-key.js';
import type { LockRouteDefinition } from './lock-route.definition.js';
import type { LockServiceBase } from './lock-service.base.js';
import type { LockedStatus } from './redlock-options.js';
import { toLockHttpException } from './redlock-http.exceptions.js';
import { RedlockService, redlockServices } from './redlock.service.js';
import { RouteLockHold } from './route-lock.hold.js';
import type { WithLockDefinition } from './with-lock.decorator.js';

/** A `@WithLock` key compiled against the request, once per definition; `null`: it is a function of the arguments. */
const withLockRouteKeys = new WeakMap<WithLockDefinition, ReturnType<typeof compileRouteKey> | null>();

/** What the guard acquires for one request. */
interface RouteLockPlan {
  readonly resources: readonly string[];
  readonly ttl: number | undefined;
  readonly using: UsingOptions;
  readonly lockedStatus: LockedStatus | undefined;
  /** `@WithLock(…, { onLocked: 'skip' })`: when contended, let the method wrapper skip the call. */
  readonly skipWhenLocked: boolean;
}

/**
 * Acquires a route handler's lock before the handler (and its pipes) run, or rejects fast:
 * {@link LockConflictException} (409/423, with `Retry-After` when the holder's remaining TTL is
 * known) when contended, {@link LockUnavailableException} (503) without a Redis quorum, 400 when
 * the request lacks a key value. The held lock is handed to {@link RedlockInterceptor}, which runs
 * the handler under it and releases it.
 *
 * It locks `@LockRoute` handlers, and `@WithLock` handlers whose key resolves from the request
 * (`<id>` from route params, then query, then body): the `@WithLock` method then reuses that lock.
 * A `@WithLock` key that does not resolve from the request (a function key, or `<dto.id>` of a
 * `@Body() dto`) is acquired by the method itself, after the pipes.
 *
 * Override the `protected` methods to change how keys, options or errors are derived.
 * Applied by `@LockRoute`, app-wide by `RedlockModule.forRoot({ http: { global: true } })`, or with
 * `@UseGuards(RedlockGuard)`.
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
  protected readonly reflector: Reflector;

  constructor(
    @Optional() @Inject(RedlockService) private readonly service?: RedlockService,
    @Optional() reflector?: Reflector,
  ) {
    this.reflector = reflector ?? new Reflector();
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const route = this.routeDefinition(context);
    if (context.getType() !== 'http') {
      // Never run a @LockRoute handler unlocked because it was reached some other way.
      // (A @WithLock handler locks itself from its arguments there.)
      if (route) throw new LockRouteContextError(`${context.getClass().name}.${context.getHandler().name}`, context.getType());
      return true;
    }
    const http = context.switchToHttp();
    const request = http.getRequest<object>();
    if (RouteLockHold.of(request)) return true; // already locked for this request (guard applied twice)
    const plan = route ? this.planLockRoute(route, request, context) : this.planWithLock(request, context);
    if (!plan) return true;
    const hold = await this.acquire(plan, context);
    if (hold) RouteLockHold.attach(request, http.getResponse<unknown>(), hold);
    return true;
  }

  /** The `@LockRoute` definition of the handler, if any. */
  protected routeDefinition(context: ExecutionContext): LockRouteDefinition | undefined {
    return this.reflector.get<LockRouteDefinition | undefined>(LOCK_ROUTE_METADATA, context.getHandler());
  }

  /** The `@WithLock` definition of the handler, if any (either decorator order: the wrapper carries it). */
  protected withLockDefinition(context: ExecutionContext): WithLockDefinition | undefined {
    return this.reflector.get<WithLockDefinition | undefined>(WITH_LOCK_METADATA, context.getHandler());
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

  /** The app's lock service; the injected one, else the process registry. */
  protected lockService(context: ExecutionContext): LockServiceBase {
    const service = this.service ?? redlockServices.lookup(undefined);
    if (!service) throw new RedlockModuleNotInitializedError(`The lock of ${context.getClass().name}.${context.getHandler().name}`);
    return service;
  }

  /** Maps acquisition failures to HTTP exceptions and sets `Retry-After` (seconds, rounded up). */
  protected toHttpException(err: unknown, lockedStatus: LockedStatus, response: unknown): unknown {
    return toLockHttpException(err, lockedStatus, response);
  }

  private planLockRoute(route: LockRouteDefinition, request: object, context: ExecutionContext): RouteLockPlan {
    return {
      resources: this.resolveResources(route, request, context),
      ttl: route.options.ttl,
      using: toUsingOptions({ ...route.options, wait: route.options.wait ?? false }),
      lockedStatus: route.options.lockedStatus,
      skipWhenLocked: false,
    };
  }

  /** A `@WithLock` handler: locked here when its key resolves from the request, else left to the method. */
  private planWithLock(request: object, context: ExecutionContext): RouteLockPlan | undefined {
    const definition = this.withLockDefinition(context);
    if (!definition) return undefined;
    let resolve = withLockRouteKeys.get(definition);
    if (resolve === undefined) {
      const where = `@WithLock on ${context.getClass().name}.${context.getHandler().name}`;
      resolve = typeof definition.key === 'function' ? null : compileRouteKey(definition.key, where);
      withLockRouteKeys.set(definition, resolve);
    }
    if (!resolve) return undefined;
    let resources: string[];
    try {
      resources = resolve(request, context);
    } catch (err) {
      // Named after a method argument the request does not carry (`<dto.id>`): the method locks it.
      if (err instanceof LockKeyError) return undefined;
      throw err;
    }
    const options: LockCallOptions = definition.options;
    return {
      resources,
      ttl: options.ttl,
      using: toUsingOptions(options),
      lockedStatus: undefined,
      skipWhenLocked: options.onLocked === 'skip',
    };
  }

  /** Acquires the plan's lock; undefined when contended on a skip-when-locked method (it skips itself). */
  private async acquire(plan: RouteLockPlan, context: ExecutionContext): Promise<RouteLockHold | undefined> {
    const service = this.lockService(context);
    const response = context.switchToHttp().getResponse<unknown>();
    // A client that gives up while we wait for the lock stops the wait.
    const abort = new AbortController();
    const stopWatching = onResponseClose(response, () => abort.abort(new Error('client closed the request')));
    try {
      return await RouteLockHold.acquire(service.redlock, plan.resources, plan.ttl ?? service.options.ttl, {
        ...plan.using,
        signal: abort.signal,
      });
    } catch (err) {
      if (plan.skipWhenLocked && err instanceof LockNotAcquiredError) return undefined;
      throw this.toHttpException(err, plan.lockedStatus ?? service.options.lockedStatus, response);
    } finally {
      stopWatching();
    }
  }
}
