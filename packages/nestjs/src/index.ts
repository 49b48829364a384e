export { RedlockModule } from './module/redlock.module.js';
export {
  REDLOCK_MODULE_OPTIONS,
  type RedlockOptionsFactory,
  type RedlockModuleAsyncOptions,
  type RedlockModuleForRootOptions,
} from './options/redlock.module-definition.js';
export {
  DEFAULT_REDLOCK_MODULE_OPTIONS,
  type IndependenceCheckMode,
  type LockedStatus,
  type RedlockHttpOptions,
  type RedlockModuleOptions,
  type ResolvedRedlockModuleOptions,
} from './options/redlock-options.js';
export { RedlockService } from './service/redlock.service.js';
export { getRedlockServiceToken, InjectRedlock } from './module/inject-redlock.decorator.js';
export {
  WithLock,
  type LockableMethod,
  type WithLockDecorator,
  type WithLockDefinition,
  type WithLockOptions,
} from './method/with-lock.decorator.js';
export { WithSemaphore, type WithSemaphoreOptions } from './method/with-semaphore.decorator.js';
export { LockedResultError } from './service/locked-result.js';
export { LockRoute } from './http/lock-route.decorator.js';
export type { LockRouteDefinition, LockRouteOptions } from './http/lock-route.definition.js';
export type { LockCallOptions, OnLocked } from './options/lock-call-options.js';
export type { LockKey, RouteLockKey } from './keys/lock-key.js';
export { currentLock } from './service/lock-context.js';
export { RedlockGuard } from './http/redlock.guard.js';
export { RedlockInterceptor } from './http/redlock.interceptor.js';
export {
  LockConflictException,
  LockUnavailableException,
  StaleFencingTokenException,
  type LockConflictBody,
  type LockConflictDetails,
} from './http/redlock-http.exceptions.js';
export { RedlockExceptionFilter } from './http/redlock-exception.filter.js';
export { FencingUnavailableError, LockKeyError, LockRouteContextError, RedlockModuleNotInitializedError } from './errors/errors.js';
export { DEFAULT_REDLOCK_NAME, LOCK_ROUTE_METADATA, WITH_LOCK_METADATA } from './options/constants.js';
export { RedlockDashboardModule } from './dashboard/redlock-dashboard.module.js';
export type { RedlockDashboardOptions } from './dashboard/dashboard.options.js';
export type { DashboardNode, DashboardRelease, DashboardSnapshot } from './dashboard/dashboard-data.js';
export type { TimelineEvent, TimelineEventType, TimelineSnapshot } from './dashboard/event-timeline.js';
