import type { ExecutionContext } from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA, FILTER_CATCH_EXCEPTIONS } from '@nestjs/common/constants.js';
import type { ApplicationConfig } from '@nestjs/core';
import { RedlockError } from '@redlock-nest/core';

/**
 * Whether an exception filter of this route (method, controller, or app-wide) names `error`'s class,
 * or a lock error class it extends, in its `@Catch(...)`: that filter owns the error (for example a
 * subclass of `RedlockExceptionFilter` that answers stale writes its own way), so the interceptor
 * hands it over unchanged. Catch-all filters (`@Catch()`) do not count: they usually pass lock
 * errors on to Nest's default answer, a 500.
 */
export function filterNamesLockError(error: unknown, context: ExecutionContext, config: ApplicationConfig | undefined): boolean {
  if (!(error instanceof RedlockError)) return false;
  const scoped = [context.getHandler(), context.getClass()].flatMap(
    (target) => (Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, target) as unknown[] | undefined) ?? [],
  );
  return [...scoped, ...(config?.getGlobalFilters() ?? [])].some((filter) => {
    const type = typeof filter === 'function' ? filter : (filter as object | null)?.constructor;
    if (!type) return false;
    const caught = (Reflect.getMetadata(FILTER_CATCH_EXCEPTIONS, type) as unknown[] | undefined) ?? [];
    return caught.some((c) => typeof c === 'function' && (c === RedlockError || c.prototype instanceof RedlockError) && error instanceof c);
  });
}
