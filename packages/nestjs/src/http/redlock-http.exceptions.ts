import { BadRequestException, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { LockLostError, LockNotAcquiredError, QuorumUnavailableError, StaleFencingTokenError } from '@redlock-nest/core';
import { LockKeyError } from '../errors/errors.js';
import { setResponseHeader } from './http-response.js';
import { recentHolds, type RecentHolds } from '../service/recent-holds.js';
import type { LockedStatus } from '../options/redlock-options.js';

/**
 * `Retry-After` when nothing better is known (no TTL reported, no hold seen): the smallest value,
 * so a client that honours it neither spins nor waits long for a lock that may already be free.
 */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/**
 * Seconds for `Retry-After`, rounded up, at least 1.
 * - Contention: the smaller of the holder's remaining validity the nodes reported
 *   (`retryAfterMs`) and how long locks on these resources were typically held, as this process
 *   saw them released (see {@link RecentHolds}); 1 s when neither is known.
 * - No quorum: when the nodes in their restart window count again (`retryAfterMs`), else 1 s.
 */
export function retryAfterSeconds(error: LockNotAcquiredError | QuorumUnavailableError, holds: RecentHolds = recentHolds): number {
  let ms = error.retryAfterMs;
  if (error instanceof LockNotAcquiredError) {
    const typical = holds.typicalMs(error.resources);
    if (typical !== undefined) ms = ms === undefined ? typical : Math.min(ms, typical);
  }
  return ms === undefined ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(ms / 1000));
}

/** Body of a {@link LockConflictException}. */
export interface LockConflictBody {
  readonly statusCode: LockedStatus;
  readonly error: 'Conflict' | 'Locked';
  readonly message: string;
  /** The contended resources. */
  readonly resources: readonly string[];
  /** A semaphore's number of permits, when every permit was in use. */
  readonly permits?: number;
  /** Seconds after which a retry may succeed (also sent as `Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/** What a {@link LockConflictException} says beyond its resources. */
export interface LockConflictDetails {
  /** A full semaphore: its number of permits. */
  readonly permits?: number | undefined;
  /** The lock was lost, not refused: the request may have run partly. */
  readonly lost?: boolean;
}

function conflictMessage(resources: readonly string[], details: LockConflictDetails, retryAfter: number | undefined): string {
  const names = resources.join(', ');
  const what =
    details.permits !== undefined
      ? `all ${details.permits} permit${details.permits === 1 ? '' : 's'} of ${names} ${details.permits === 1 ? 'is' : 'are'} in use`
      : details.lost
        ? `the lock on ${names} was lost while the request ran (it expired or was taken over)`
        : `${names} is locked by another request or process`;
  return `${what}; retry ${retryAfter === undefined ? 'shortly' : `in ${retryAfter} s`}.`;
}

/**
 * The route's lock is held by another request or process, or every permit of its semaphore is
 * in use: 409 Conflict (default) or 423 Locked (module option `lockedStatus`), with `Retry-After`
 * (see {@link retryAfterSeconds}). Catch or remap it with an exception filter.
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
  /** A full semaphore's number of permits; undefined for a lock. */
  readonly permits: number | undefined;

  constructor(
    resources: readonly string[],
    status: LockedStatus = HttpStatus.CONFLICT,
    retryAfterSeconds?: number,
    cause?: unknown,
    details: LockConflictDetails = {},
  ) {
    const body: LockConflictBody = {
      statusCode: status,
      error: status === 423 ? 'Locked' : 'Conflict',
      message: conflictMessage(resources, details, retryAfterSeconds),
      resources,
      ...(details.permits === undefined ? {} : { permits: details.permits }),
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    };
    super(body, status, cause === undefined ? undefined : { cause });
    this.resources = resources;
    this.retryAfterSeconds = retryAfterSeconds;
    this.permits = details.permits;
  }
}

/**
 * Too few lock nodes are reachable for a quorum (Redis nodes, or etcd members with a leader): 503 Service Unavailable, with
 * `Retry-After` (when the nodes in their restart window count again, else 1 s). An
 * infrastructure problem, not contention; the request was not run. The message says what to
 * check: that a majority of the lock's Redis nodes are up and reachable.
 *
 * @example
 * ```ts
 * throw new LockUnavailableException(['order:42'], err, 3); // 503, "retry in 3 s"
 * ```
 */
export class LockUnavailableException extends HttpException {
  readonly resources: readonly string[];
  /** Seconds after which a retry may succeed; also sent as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(resources: readonly string[], cause?: unknown, retryAfterSeconds?: number) {
    super(
      {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        error: 'Service Unavailable',
        message:
          'The lock service is unavailable: too few of its nodes answered for a majority, so the request was not run. ' +
          `Check that a majority of the lock's nodes (Redis, or etcd members) are up and reachable; retry ${
            retryAfterSeconds === undefined ? 'shortly' : `in ${retryAfterSeconds} s`
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

/**
 * A fenced resource refused the request's write: a newer lock holder (a higher fencing token)
 * had written first, so this request's lock had expired while it ran (a pause, a slow call).
 * 409 Conflict with `error: 'Stale Fencing Token'`, whatever `lockedStatus` says (nothing is
 * locked now: the state changed under the request). Nothing was written; retrying acts on the
 * current state.
 *
 * @example
 * ```ts
 * @Catch(StaleFencingTokenException)
 * export class StaleFilter implements ExceptionFilter {
 *   catch(e: StaleFencingTokenException, host: ArgumentsHost) {
 *     host.switchToHttp().getResponse().status(409).json({ stale: e.resource });
 *   }
 * }
 * ```
 */
export class StaleFencingTokenException extends HttpException {
  readonly resource: string;

  constructor(resource: string, cause?: unknown) {
    super(
      {
        statusCode: HttpStatus.CONFLICT,
        error: 'Stale Fencing Token',
        message:
          `The write to ${resource} was refused: a newer lock holder wrote first (this request's lock had expired), ` +
          'so nothing was written. Retry to act on the current state.',
        resources: [resource],
      },
      HttpStatus.CONFLICT,
      cause === undefined ? undefined : { cause },
    );
    this.resource = resource;
  }
}

const logger = new Logger('Redlock');

/**
 * The HTTP answer to a lock error, written once for the guard, the interceptor and the filter:
 * contention (a held lock, a full semaphore) is 409/423 with `Retry-After` (set on `response`);
 * a lock lost to another holder is a conflict too; a write refused by a fenced resource is 409
 * 'Stale Fencing Token' and logs a warning (a holder outlived its lock: worth knowing);
 * no quorum is 503 with `Retry-After`; a key that resolved to nothing is the client's fault (400).
 * Anything else is returned unchanged.
 */
export function toLockHttpException(error: unknown, lockedStatus: LockedStatus, response?: unknown, holds?: RecentHolds): unknown {
  if (error instanceof LockNotAcquiredError || error instanceof QuorumUnavailableError) {
    const seconds = retryAfterSeconds(error, holds);
    if (response !== undefined) setResponseHeader(response, 'Retry-After', String(seconds));
    return error instanceof LockNotAcquiredError
      ? new LockConflictException(error.resources, lockedStatus, seconds, error, { permits: error.permits })
      : new LockUnavailableException(error.resources, error, seconds);
  }
  if (error instanceof LockLostError) return new LockConflictException(error.resources, lockedStatus, undefined, error, { lost: true });
  if (error instanceof StaleFencingTokenError) {
    logger.warn(
      `Stale fencing token: the write to ${error.resource} with token ${error.token} was refused` +
        `${error.currentToken === undefined ? '' : ` (the resource has seen ${error.currentToken})`}: ` +
        "the request's lock expired while it ran and a newer holder wrote first. Answered 409.",
    );
    return new StaleFencingTokenException(error.resource, error);
  }
  if (error instanceof LockKeyError) return new BadRequestException(error.message, { cause: error });
  return error;
}
