import { Catch, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { LockLostError, StaleFencingTokenError } from '@redlock-nest/core';

interface JsonResponse {
  status(code: number): JsonResponse;
  json(body: unknown): unknown;
}

/**
 * Errors that mean "this request's lock was not good enough to write", answered as
 * 409 so the client retries (the payment was NOT made), instead of a 500.
 * - StaleFencingTokenError: the database refused a paused holder's late write.
 * - LockLostError: the holder learnt its lock was gone before it wrote.
 */
@Catch(StaleFencingTokenError, LockLostError)
export class LockErrorsFilter implements ExceptionFilter {
  catch(error: StaleFencingTokenError | LockLostError, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<JsonResponse>();
    const stale = error instanceof StaleFencingTokenError;
    res.status(HttpStatus.CONFLICT).json({
      statusCode: HttpStatus.CONFLICT,
      error: stale ? 'StaleFencingToken' : 'LockLost',
      message: error.message,
      ...(stale ? { resource: error.resource, token: String(error.token), currentToken: String(error.currentToken) } : {}),
    });
  }
}
