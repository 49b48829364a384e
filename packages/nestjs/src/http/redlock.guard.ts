import { BadRequestException, Injectable, Optional, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { LockNotAcquiredError, type UsingOptions } from '@redlock-nest/core';
import { LOCK_ROUTE_METADATA, WITH_LOCK_METADATA } from '../options/constants.js';
import { LockKeyError, LockRouteContextError, RedlockModuleNotInitializedError } from '../errors/errors.js';
import { onResponseClose } from './http-response.js';
import { usingOptionsOf, type LockedCallOptions } from '../options/lock-call-options.js';
import { compileRouteKey } from '../keys/lock-key.js';
import type { LockRouteDefinition } from './lock-route.definition.js';
import type { LockServiceBase } from '../service/lock-service.base.js';
import type { LockedStatus } from '../options/redlock-options.js';
import { toLockHttpException } from './redlock-http.exceptions.js';
import { findAppLockServices } from '../service/lock-service-bindings.js';
import { LockRouteHold } from './lock-route.hold.js';
import type { WithLockDefinition } from '../method/with-lock.decorator.js';

/**
 * How the guard locks for one handler's definition: everything but the resources, derived once per
 * definition (definitions are immutable) instead of on every request.
 */
interface LockPlanTemplate {
  readonly ttl: number | undefined;
  /** `undefined`: the defaults (the core reads no options object then). */
  readonly using: UsingOptions | undefined;
  readonly lockedStatus: LockedStatus | undefined;
  /** `@WithLock(…, { onLocked: 'skip' })`: when contended, let the method wrapper skip the call. */
  readonly skipWhenLocked: boolean;
  /**
   * Whether the acquisition may wait for a held lock. Only then can the client leave during it, so
   * only then is the response watched to stop the wait (an AbortController and a listener per request
   * otherwise spent for nothing: a single attempt is not interrupted, and a hold whose client left
   * before the handler started is released unused by LockRouteHold either way).
   */
  readonly mayWait: boolean;
}

/** What the guard acquires for one request: the handler's template, and this request's resources. */
interface RouteLockPlan {
  readonly template: LockPlanTemplate;
  readonly resources: readonly string[];
}

/** The answer of a request the guard lets through without a lock (a settled promise can be shared). */
const ALLOWED: Promise<boolean> = Promise.resolve(true);

function planTemplate(options: LockedCallOptions, lockedStatus: LockedStatus | undefined, skipWhenLocked: boolean): LockPlanTemplate {
  const using = usingOptionsOf(options);
  return { ttl: options.ttl, using: using && Object.freeze(using), lockedStatus, skipWhenLocked, mayWait: using?.retry !== false };
}

/** The plan template of each `@LockRoute` definition, made at its first request. */
const lockRouteTemplates = new WeakMap<LockRouteDefinition, LockPlanTemplate>();

/**
 * A `@WithLock` key compiled against the request with its plan template, once per definition;
 * `null`: the key is a function of the arguments (the method locks by itself).
 */
const withLockRoutePlans = new WeakMap<
  WithLockDefinition,
  { readonly resolve: ReturnType<typeof compileRouteKey>; readonly template: LockPlanTemplate } | null
>();

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

  constructor(@Optional() reflector?: Reflector) {
    this.reflector = reflector ?? new Reflector();
  }

  canActivate(context: ExecutionContext): Promise<boolean> {
    // Not `async`: a request that needs no lock answers without a promise layer of its own, and a
    // locked one has a single `then` after the acquisition. Throws still reject, as an async method's.
    try {
      const route = this.routeDefinition(context);
      if (context.getType() !== 'http') {
        // Never run a @LockRoute handler unlocked because it was reached some other way.
        // (A @WithLock handler locks itself from its arguments there.)
        if (route) throw new LockRouteContextError(`${context.getClass().name}.${context.getHandler().name}`, context.getType());
        return ALLOWED;
      }
      // The request and response by position, as `switchToHttp()` reads them, without the three
      // closures it assigns onto the context on every call.
      const request = context.getArgByIndex<object>(0);
      if (LockRouteHold.of(request)) return ALLOWED; // already locked for this request (guard applied twice)
      const planned = route ? this.planLockRoute(route, request, context) : this.planWithLock(request, context);
      if (!planned) return ALLOWED;
      return this.acquire(planned.template, planned.resources, context, request, context.getArgByIndex<unknown>(1));
    } catch (err) {
      return Promise.reject(err);
    }
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

  /**
   * The lock service of the route's `redlock` instance (default: the unnamed one), found through
   * the app that created this guard (see RedlockInstanceBinder), like `@WithLock` methods do.
   */
  protected lockService(context: ExecutionContext): LockServiceBase {
    const name = this.routeDefinition(context)?.options.redlock ?? this.withLockDefinition(context)?.options.redlock;
    const app = findAppLockServices(this);
    const service = app?.get(name);
    if (!service) {
      throw new RedlockModuleNotInitializedError(
        `The lock of ${context.getClass().name}.${context.getHandler().name}`,
        name,
        app !== undefined,
      );
    }
    return service;
  }

  /** Maps acquisition failures to HTTP exceptions and sets `Retry-After` (seconds, rounded up). */
  protected toHttpException(err: unknown, lockedStatus: LockedStatus, response: unknown): unknown {
    return toLockHttpException(err, lockedStatus, response);
  }

  private planLockRoute(route: LockRouteDefinition, request: object, context: ExecutionContext): RouteLockPlan {
    let template = lockRouteTemplates.get(route);
    if (!template) {
      template = planTemplate({ ...route.options, wait: route.options.wait ?? false }, route.options.lockedStatus, false);
      lockRouteTemplates.set(route, template);
    }
    return { template, resources: this.resolveResources(route, request, context) };
  }

  /** A `@WithLock` handler: locked here when its key resolves from the request, else left to the method. */
  private planWithLock(request: object, context: ExecutionContext): RouteLockPlan | undefined {
    const definition = this.withLockDefinition(context);
    if (!definition) return undefined;
    let known = withLockRoutePlans.get(definition);
    if (known === undefined) {
      const where = `@WithLock on ${context.getClass().name}.${context.getHandler().name}`;
      const options: LockedCallOptions = definition.options;
      known =
        typeof definition.key === 'function'
          ? null
          : { resolve: compileRouteKey(definition.key, where), template: planTemplate(options, undefined, options.onLocked === 'skip') };
      withLockRoutePlans.set(definition, known);
    }
    if (!known) return undefined;
    let resources: string[];
    try {
      resources = known.resolve(request, context);
    } catch (err) {
      // Named after a method argument the request does not carry (`<dto.id>`): the method locks it.
      if (err instanceof LockKeyError) return undefined;
      throw err;
    }
    return { template: known.template, resources };
  }

  /**
   * Acquires the plan's lock and hands it to the request; allows the request without a lock when
   * contended on a skip-when-locked method (it skips itself).
   */
  private acquire(
    plan: LockPlanTemplate,
    resources: readonly string[],
    context: ExecutionContext,
    request: object,
    response: unknown,
  ): Promise<boolean> {
    const service = this.lockService(context);
    let stopWatching: (() => void) | undefined;
    let using = plan.using;
    if (plan.mayWait) {
      // A client that gives up while we wait for the lock stops the wait.
      const abort = new AbortController();
      stopWatching = onResponseClose(response, () => abort.abort(new Error('client closed the request')));
      using = { ...using, signal: abort.signal };
    }
    return LockRouteHold.acquire(service.redlock, resources, plan.ttl ?? service.options.ttl, using).then(
      (hold) => {
        stopWatching?.();
        LockRouteHold.attach(request, response, hold);
        return true;
      },
      (err: unknown) => {
        stopWatching?.();
        if (plan.skipWhenLocked && err instanceof LockNotAcquiredError) return true;
        throw this.toHttpException(err, plan.lockedStatus ?? service.options.lockedStatus, response);
      },
    );
  }
}
