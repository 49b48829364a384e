import { Inject, Injectable, Optional, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { ApplicationConfig, Reflector } from '@nestjs/core';
import { catchError, Observable, throwError } from 'rxjs';
import { LOCK_ROUTE_METADATA } from '../options/constants.js';
import { filterNamesLockError } from '../errors/lock-error-owners.js';
import { runInLockContext } from '../service/lock-context.js';
import type { LockRouteDefinition } from './lock-route.definition.js';
import { toLockHttpException } from './redlock-http.exceptions.js';
import { DEFAULT_REDLOCK_MODULE_OPTIONS, type LockedStatus } from '../options/redlock-options.js';
import type { LockServiceBase } from '../service/lock-service.base.js';
import { RedlockService } from '../service/redlock.service.js';
import { LockRouteHold } from './lock-route.hold.js';
import { isStreamedBody, streamsAfterHandler } from './streamed-response.js';

/**
 * Runs a route handler inside the lock its {@link RedlockGuard} acquired: `currentLock()` works
 * in the handler and `@WithLock` calls on the same key are reentrant; the lock is extended while
 * the handler runs and released when it completes or errors, or when the client disconnects
 * after the handler has produced its result. A streamed body (`StreamableFile`, a returned
 * stream, an `@Sse()` observable, a handler writing through `@Res()`) keeps the lock until the
 * response is fully written or its client left.
 *
 * A hold that was released or lost before the handler started (its client left while a later
 * guard ran; it expired) is never used: the handler does not run and the request answers 409/423.
 * A handler still computing when the client disconnects keeps the lock until it finishes:
 * releasing earlier would let a second request into the critical section while this one runs.
 *
 * Lock errors thrown by any handler (for example a `@WithLock` method it calls) answer 409/423
 * with `Retry-After`, 503 or 400 instead of 500, unless an exception filter of the app names their
 * class in its `@Catch` (it then gets them unchanged). `RedlockModule` registers it app-wide.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class AlertingRedlockInterceptor extends RedlockInterceptor {
 *   protected override onLockLost(error: unknown, context: ExecutionContext) {
 *     metrics.lostLocks.inc({ handler: context.getHandler().name });
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlockInterceptor implements NestInterceptor {
  private readonly reflector: Reflector;

  constructor(
    @Optional() @Inject(RedlockService) private readonly service?: LockServiceBase,
    @Optional() reflector?: Reflector,
    @Optional() private readonly config?: ApplicationConfig,
  ) {
    this.reflector = reflector ?? new Reflector();
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    // The request and response by position, as `switchToHttp()` reads them, without the three
    // closures it assigns onto the context on every call.
    const hold = LockRouteHold.of(context.getArgByIndex<object>(0));
    const claim = hold?.claim();
    if (!hold || claim === 'inside') {
      return next
        .handle()
        .pipe(catchError((err: unknown) => throwError(() => this.toHttpException(err, context, context.getArgByIndex(1)))));
    }
    const response = context.getArgByIndex<unknown>(1);
    // Released (the client left) or lost (expired) before the handler started: it must not run.
    if (claim === 'refused') return throwError(() => this.toHttpException(hold.refusal(), context, response));
    hold.onLost((err) => this.onLockLost(err, context));
    const streamsBody = streamsAfterHandler(context);

    return new Observable<unknown>((subscriber) => {
      // Released or lost since the claim (the response ended first, the lock expired): do not run.
      if (!hold.begin()) {
        subscriber.error(this.toHttpException(hold.refusal(), context, response));
        return;
      }
      let produced = false;
      let streamed = streamsBody;
      let handedOver = false;
      // next.handle() binds the handler to the async context it is called in: call it inside the lock context.
      const inner = runInLockContext(hold.lock, hold.owner, () => next.handle()).subscribe({
        next: (value) => {
          produced = true;
          if (isStreamedBody(value)) streamed = true;
          subscriber.next(value);
        },
        // Release BEFORE the response goes out: a client's next request must not hit its own lock.
        error: (err: unknown) => void hold.release().then(() => subscriber.error(this.toHttpException(err, context, response))),
        complete: () => {
          if (streamed || hold.responseStarted()) {
            // The body is written after this: hold the lock until it is (or the client left).
            handedOver = true;
            hold.releaseWhenResponseDone();
            subscriber.complete();
          } else {
            void hold.release().then(() => subscriber.complete());
          }
        },
      });
      const stopWatching = hold.onResponseClose(() => {
        if (!produced) return; // the handler is still running; its completion releases
        inner.unsubscribe();
        subscriber.complete();
      });
      return () => {
        stopWatching();
        inner.unsubscribe();
        if (!handedOver) void hold.release();
      };
    });
  }

  /**
   * The lock was lost while the handler ran (its `currentLock().signal` aborted). The default
   * does nothing more: `RedlockService` already logs one warning per lost lock. Override to
   * alert, record it per route, or log the handler's name. The response itself is not changed.
   */
  protected onLockLost(_error: unknown, _context: ExecutionContext): void {
    // One log line per lost lock is written by the service; see lost-lock.logger.ts.
  }

  /**
   * A lock error thrown by the handler as the HTTP exception to answer with (409/423 + `Retry-After`,
   * 503, 400); other errors, and lock errors an exception filter of the app names in its `@Catch`,
   * unchanged.
   */
  protected toHttpException(error: unknown, context: ExecutionContext, response: unknown): unknown {
    if (filterNamesLockError(error, context, this.config)) return error;
    return toLockHttpException(error, this.lockedStatus(context), response);
  }

  /** The status of a contended or lost lock: the route's `lockedStatus`, else the module's. */
  private lockedStatus(context: ExecutionContext): LockedStatus {
    const route = this.reflector.get<LockRouteDefinition | undefined>(LOCK_ROUTE_METADATA, context.getHandler());
    return route?.options.lockedStatus ?? this.service?.options.lockedStatus ?? DEFAULT_REDLOCK_MODULE_OPTIONS.lockedStatus;
  }
}
