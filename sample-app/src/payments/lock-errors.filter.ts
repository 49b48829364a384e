import { HttpException, type ArgumentsHost } from '@nestjs/common';
import { StaleFencingTokenError } from '@redlock-nest/core';
import { RedlockExceptionFilter } from '@redlock-nest/nestjs';

/**
 * The package's {@link RedlockExceptionFilter} (its `@Catch` list is inherited): lock errors
 * that escape a handler become 409 + Retry-After (contention, `LockLostError`, a write refused
 * by the fence) or 503 (no quorum) instead of a 500; the payment was not made.
 *
 * One addition: a write refused by the fence (`StaleFencingTokenError`, a paused holder's late
 * capture) is marked `error: "StaleFencingToken"` instead of `"Conflict"`, so clients (the
 * demo's counters) can tell a rejected stale write from ordinary contention.
 */
export class LockErrorsFilter extends RedlockExceptionFilter {
  protected override toHttpException(exception: unknown, host: ArgumentsHost): unknown {
    const answer = super.toHttpException(exception, host);
    if (!(exception instanceof StaleFencingTokenError) || !(answer instanceof HttpException)) return answer;
    const body = answer.getResponse() as Record<string, unknown>;
    return new HttpException({ ...body, error: 'StaleFencingToken' }, answer.getStatus(), { cause: exception });
  }
}
