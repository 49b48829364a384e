import { BadRequestException, HttpException, HttpStatus } from '@nestjs/common';
import { LockLostError, LockNotAcquiredError, QuorumUnavailableError, StaleFencingTokenError } from '@redlock-nest/core';
import { LockKeyError } from './errors.js';
import { setResponseHeader } from './http-response.js';
import type { LockedStatus } from './redlock-options.js';

/**
 * Seconds for `Retry-After`, rounded up: from the holder's remaining TTL (contention), or from
 * when the nodes in their restart window count again (no quorum). Undefined when unknown.
 */
export function retryAfterSeconds(error: LockNotAcquiredError | QuorumUnavailableError): number | undefined {
  return error.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(error.retryAfterMs / 1000));
}

/** Body of a {@link LockConflictException}. */
export interface LockConflictBody {
  readonly statusCode: LockedStatus;
  readonly error: 'Conflict' | 'Locked';
  readonly message: string;
  /** The contended resources. */
  readonly resources: readonly string[];
  /** Seconds until the holder's lock expires, when the nodes reported it (also sent as `Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/**
 * The route's lock is held by another request or process: 409 Conflict (default) or 423 Locked
 * (module option `lockedStatus`). The guard also sets `Retry-After` when the remaining TTL is known.
 * Catch or remap it with an exception filter.
 *
 * @example
 * ```ts
 * @Catch(LockConflictException)
 * export class BusyFilter implements ExceptionFilter {
 *   catch(e: LockConflictException, host: ArgumentsHost) {
 *     host.switchToHttp().getResponse().status(429).json({ busy: e.resources });
 *   }
 * }
 * ```
 */
export class LockConflictException extends HttpException {
  readonly resources: readonly string[];
  readonly retryAfterSeconds: number | undefined;

  constructor(resources: readonly string[], status: LockedStatus = HttpStatus.CONFLICT, retryAfterSeconds?: number, cause?: unknown) {
    const body: LockConflictBody = {
      statusCode: status,
      error: status === 423 ? 'Locked' : 'Conflict',
      message: `${resources.join(', ')} is being changed by another request; retry ${
        retryAfterSeconds === undefined ? 'shortly' : `in ${retryAfterSeconds} s`
      }.`,
      resources,
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    };
    super(body, status, cause === undefined ? undefined : { cause });
    this.resources = resources;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * Too few lock nodes are reachable for a quorum (Redis nodes, or etcd members with a leader):
 * 503 Service Unavailable. An infrastructure problem, not contention; the request was not run.
 */
export class LockUnavailableException extends HttpException {
  readonly resources: readonly string[];
  /** Seconds until a quorum of nodes counts again, when known (nodes in their restart window); also sent as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(resources: readonly string[], cause?: unknown, retryAfterSeconds?: number) {
    super(
      {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        error: 'Service Unavailable',
        message: `The lock service is unavailable (no quorum of lock nodes answered); the request was not run${
          retryAfterSeconds === undefined ? '' : `: retry in ${retryAfterSeconds} s`
        }.`,
        resources,
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
      },
      HttpStatus.SERVICE_UNAVAILABLE,
      cause === undefined ? undefined : { cause },
    );
    this.resources = resources;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The lock errors {@link toLockHttpException} answers with a 4xx/503 instead of a 500. */
export const HTTP_MAPPED_LOCK_ERRORS = [
  LockNotAcquiredError,
  QuorumUnavailableError,
  LockLostError,
  StaleFencingTokenError,
  LockKeyError,
] as const;

/**
 * The HTTP answer to a lock error, written once for the guard, the interceptor and the filter:
 * contention is 409/423 with `Retry-After` (set on `response`) when the holder's TTL is known;
 * a lock lost to another holder and a write refused by a fenced resource are conflicts too;
 * no quorum is 503; a key that resolved to nothing is the client's fault (400).
 * Anything else is returned unchanged.
 */
export function toLockHttpException(error: unknown, lockedStatus: LockedStatus, response?: unknown): unknown {
  if (error instanceof LockNotAcquiredError || error instanceof QuorumUnavailableError) {
    const seconds = retryAfterSeconds(error);
    if (seconds !== undefined && response !== undefined) setResponseHeader(response, 'Retry-After', String(seconds));
    return error instanceof LockNotAcquiredError
      ? new LockConflictException(error.resources, lockedStatus, seconds, error)
      : new LockUnavailableException(error.resources, error, seconds);
  }
  if (error instanceof LockLostError) return new LockConflictException(error.resources, lockedStatus, undefined, error);
  if (error instanceof StaleFencingTokenError) return new LockConflictException([error.resource], lockedStatus, undefined, error);
  if (error instanceof LockKeyError) return new BadRequestException(error.message, { cause: error });
  return error;
}
