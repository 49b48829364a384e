/** Metadata key under which `@LockRoute` stores its key template and options on a route handler. */
export const LOCK_ROUTE_METADATA = 'redlock-nest:lock-route';

/** Metadata key under which `@WithLock` records its definition on the wrapped method (for tooling and tests). */
export const WITH_LOCK_METADATA = 'redlock-nest:with-lock';

/**
 * Hidden property the module sets on the provider and controller instances it owns, pointing
 * at their app's `RedlockService`. A symbol, so it never collides with user fields or shows in JSON.
 */
export const REDLOCK_SERVICE_BINDING: unique symbol = Symbol('redlock-nest:service');

/** Marks a class prototype that has at least one `@WithLock` method, so discovery binds only those. */
export const HAS_LOCKED_METHODS: unique symbol = Symbol('redlock-nest:has-locked-methods');

