/** Metadata key under which `@LockRoute` stores its key template and options on a route handler. */
export const LOCK_ROUTE_METADATA = 'redlock-nest:lock-route';

/** Metadata key under which `@WithLock` records its definition on the wrapped method (for tooling and tests). */
export const WITH_LOCK_METADATA = 'redlock-nest:with-lock';

/** The name of the unnamed (default) Redlock instance: `RedlockModule.forRoot({ nodes })` without `name`. */
export const DEFAULT_REDLOCK_NAME = 'default';

/** Injection token of the instance name of a `RedlockModule` import (inside that module). */
export const REDLOCK_INSTANCE_NAME: unique symbol = Symbol('redlock-nest:instance-name');

/**
 * Inside one `RedlockModule` import: its own lock service, whatever token it is exported under
 * (`RedlockService` for the default instance, a named token otherwise).
 */
export const REDLOCK_LOCAL_SERVICE: unique symbol = Symbol('redlock-nest:local-service');
