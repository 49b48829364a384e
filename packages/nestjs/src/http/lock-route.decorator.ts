import { applyDecorators, SetMetadata, UseGuards, UseInterceptors } from '@nestjs/common';
import { LOCK_ROUTE_METADATA } from '../options/constants.js';
import { checkLockedStatus } from '../options/redlock-options.js';
import { checkLockCallOptions } from '../options/lock-call-options.js';
import { compileRouteKey, type RouteLockKey } from '../keys/lock-key.js';
import { RedlockGuard } from './redlock.guard.js';
import { RedlockInterceptor } from './redlock.interceptor.js';
import type { LockRouteDefinition, LockRouteOptions } from './lock-route.definition.js';

/**
 * Locks an HTTP route for the whole request: {@link RedlockGuard} resolves the key from the request
 * and acquires (or answers 409/423 with `Retry-After`, or 503 when Redis has no quorum) before any
 * pipe or handler runs; {@link RedlockInterceptor} keeps the lock extended while the handler (and a
 * streamed/observable response) runs and releases it when the response completes, fails or the client
 * disconnects. `@WithLock` methods called inside on the same key reuse the lock (no second acquisition).
 *
 * Keys: `<id>` from route params, then query, then body; explicit `<params.x>`, `<query.x>`,
 * `<body.x>`, `<headers.x>`, `<user.x>`; or a function `(request, context) => string | string[]`.
 *
 * @example
 * ```ts
 * @Post(':id/pay')
 * @LockRoute('order:<id>', { ttl: 15_000 })
 * pay(@Param('id') id: string) { ... }
 *
 * @Put('carts')
 * @LockRoute(['cart:<body.cartId>', 'user:<user.id>'], { wait: 1_000, lockedStatus: 423 })
 * updateCart(@Body() dto: CartDto) { ... }
 * ```
 */
export function LockRoute(key: RouteLockKey, options?: LockRouteOptions): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const where = `@LockRoute on ${(typeof target === 'function' ? target : target.constructor).name}.${String(propertyKey)}`;
    const opts = checkLockCallOptions(options, where) as LockRouteOptions;
    if (opts.lockedStatus !== undefined) checkLockedStatus(opts.lockedStatus, `${where}: lockedStatus`);
    const definition: LockRouteDefinition = { key, options: opts, resolve: compileRouteKey(key, where) };
    return applyDecorators(SetMetadata(LOCK_ROUTE_METADATA, definition), UseGuards(RedlockGuard), UseInterceptors(RedlockInterceptor))(
      target,
      propertyKey,
      descriptor,
    );
  };
}
