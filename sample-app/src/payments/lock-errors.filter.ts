import { HttpException, type ArgumentsHost } from '@nestjs/common';
import { StaleFencingTokenError } from '@redlock-nest/core';
import { RedlockExceptionFilter } from '@redlock-nest/nestjs';

/**
 * The package's {@link RedlockExceptionFilter} (its `@Catch` list is inherited): lock errors
 * that escape a handler become 409 + Retry-After (contention, `LockLostError`), 409 'Stale
 * Fencing Token' (a write refused by the fence) or 503 (no quorum) instead of a 500; the
 * payment was not made.
 *
 * One change: a write refused by the fence (`StaleFencingTokenError`, a paused holder's late
 * capture) is marked `error: "StaleFencingToken"`, the one-word code the demo's clients and
 * counters match on, instead of the package's `"Stale Fencing Token"`.
 */
export class LockErrorsFilter extends RedlockExceptionFilter {
  protected override toHttpException(exception: unknown, host: ArgumentsHost): unknown {
    const answer = super.toHttpException(exception, host);
    if (!(exception instanceof StaleFencingTokenError) || !(answer instanceof HttpException)) return answer;
    const body = answer.getResponse() as Record<string, unknown>;
    return new HttpException({ ...body, error: 'StaleFencingToken' }, answer.getStatus(), { cause: exception });
  }
}
