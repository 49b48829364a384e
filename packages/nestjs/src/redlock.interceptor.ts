import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { ROUTE_LOCK_HOLD } from './constants.js';
import { onResponseClose } from './http-response.js';
import { runInLockContext } from './lock-context.js';
import type { RouteLockHold } from './route-lock.hold.js';

/**
 * Runs a `@LockRoute` handler inside the lock its {@link RedlockGuard} acquired: `currentLock()`
 * works in the handler and `@WithLock` calls on the same key are reentrant; the lock is extended
 * while the handler (or its observable/streamed response) runs and released when it completes or
 * errors, or when the client disconnects after the handler has produced its result.
 *
 * A handler still computing when the client disconnects keeps the lock until it finishes:
 * releasing earlier would let a second request into the critical section while this one runs.
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
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const hold = http.getRequest<Record<symbol, unknown>>()[ROUTE_LOCK_HOLD] as RouteLockHold | undefined;
    if (!hold || !hold.claim()) return next.handle();
    const response = http.getResponse<unknown>();
    hold.settled.catch((err: unknown) => this.onLockLost(err, context));

    return new Observable<unknown>((subscriber) => {
      let produced = false;
      // next.handle() binds the handler to the async context it is called in: call it inside the lock context.
      const inner = runInLockContext(hold.lock, hold.owner, () => next.handle()).subscribe({
        next: (value) => {
          produced = true;
          subscriber.next(value);
        },
        // Release BEFORE the response goes out: a client's next request must not hit its own lock.
        error: (err: unknown) => void hold.release().then(() => subscriber.error(err)),
        complete: () => void hold.release().then(() => subscriber.complete()),
      });
      const stopWatching = onResponseClose(response, () => {
        if (!produced) return; // the handler is still running; its completion releases
        inner.unsubscribe();
        subscriber.complete();
      });
      return () => {
        stopWatching();
        inner.unsubscribe();
        void hold.release();
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
}
