import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { LockLostError, LockNotAcquiredError, QuorumUnavailableError, StaleFencingTokenError } from '@redlock-nest/core';
import { LockKeyError } from '../errors/errors.js';
import { toLockHttpException } from './redlock-http.exceptions.js';
import type { LockedStatus } from '../options/redlock-options.js';

/**
 * Maps lock errors that escape an HTTP handler (for example from a `@WithLock` method the
 * controller calls) to 409/423 with `Retry-After` and 503, instead of Nest's generic 500:
 * contention, a lock lost to another holder (`LockLostError`) and a write refused by a fenced
 * resource (`StaleFencingTokenError`) are conflicts; no quorum is 503; a key that resolved to
 * nothing (`LockKeyError`) is 400. `RedlockModule` already maps these for every HTTP handler
 * (through its app-wide `RedlockInterceptor`): use this filter only for errors thrown outside
 * handlers, or to change the status in a subclass. HTTP only.
 *
 * @example
 * ```ts
 * app.useGlobalFilters(new RedlockExceptionFilter(app.get(HttpAdapterHost).httpAdapter));
 * // or per controller: @UseFilters(RedlockExceptionFilter)
 * ```
 */
@Catch(LockNotAcquiredError, QuorumUnavailableError, LockLostError, StaleFencingTokenError, LockKeyError)
export class RedlockExceptionFilter extends BaseExceptionFilter {
  /** Status for contention; 409 unless overridden in a subclass. */
  protected readonly lockedStatus: LockedStatus = 409;

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    super.catch(this.toHttpException(exception, host), host);
  }

  /** The HTTP exception sent for a lock error; sets `Retry-After` when the holder's TTL is known. */
  protected toHttpException(exception: unknown, host: ArgumentsHost): unknown {
    return toLockHttpException(exception, this.lockedStatus, host.switchToHttp().getResponse());
  }
}
