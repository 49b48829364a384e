export { RedlockModule } from './redlock.module.js';
export {
  REDLOCK_MODULE_OPTIONS,
  type RedlockOptionsFactory,
  type RedlockModuleAsyncOptions,
  type RedlockModuleForRootOptions,
} from './redlock.module-definition.js';
export {
  DEFAULT_REDLOCK_MODULE_OPTIONS,
  type IndependenceCheckMode,
  type LockedStatus,
  type RedlockHttpOptions,
  type RedlockModuleOptions,
  type ResolvedRedlockModuleOptions,
} from './redlock-options.js';
export { RedlockService } from './redlock.service.js';
export { getRedlockServiceToken, InjectRedlock } from './inject-redlock.decorator.js';
export {
  WithLock,
  type LockableMethod,
  type WithLockDecorator,
  type WithLockDefinition,
  type WithLockOptions,
} from './with-lock.decorator.js';
export { WithSemaphore, type WithSemaphoreOptions } from './with-semaphore.decorator.js';
export { LockedResultError } from './locked-result.js';
export { LockRoute } from './lock-route.decorator.js';
export type { LockRouteDefinition, LockRouteOptions } from './lock-route.definition.js';
export type { LockCallOptions, OnLocked } from './lock-call-options.js';
export type { LockKey, RouteLockKey } from './lock-key.js';
export { currentLock } from './lock-context.js';
export { RedlockGuard } from './redlock.guard.js';
export { RedlockInterceptor } from './redlock.interceptor.js';
export {
  LockConflictException,
  LockUnavailableException,
  StaleFencingTokenException,
  type LockConflictBody,
  type LockConflictDetails,
} from './redlock-http.exceptions.js';
export { RedlockExceptionFilter } from './redlock-exception.filter.js';
export { FencingUnavailableError, LockKeyError, LockRouteContextError, RedlockModuleNotInitializedError } from './errors.js';
export { DEFAULT_REDLOCK_NAME, LOCK_ROUTE_METADATA, WITH_LOCK_METADATA } from './constants.js';
export { RedlockDashboardModule } from './dashboard/redlock-dashboard.module.js';
export type { RedlockDashboardOptions } from './dashboard/dashboard.options.js';
export type { DashboardNode, DashboardRelease, DashboardSnapshot } from './dashboard/dashboard-data.js';
export type { TimelineEvent, TimelineEventType, TimelineSnapshot } from './dashboard/event-timeline.js';
