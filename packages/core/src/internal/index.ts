/**
 * `@redlock-nest/core/internal`: what the sibling packages (`@redlock-nest/nestjs`,
 * `@redlock-nest/etcd`) share with the core, so that an option has one rule and one message
 * everywhere and a second engine hands out the same `Lock`. It is not covered by semver: any
 * release may rename or remove a name here. Applications import the root entry instead.
 *
 * @example
 * ```ts
 * import { checkTtl } from '@redlock-nest/core/internal';
 *
 * const ttlMs = checkTtl(decoratorOptions.ttl, '@WithLock on Orders.pay: ttl');
 * ```
 *
 * @internal
 * @packageDocumentation
 */
export {
  checkFair,
  checkFencing,
  checkKeyPrefix,
  checkMaxHoldMs,
  checkMode,
  checkPermits,
  checkRetry,
  checkTimeoutMs,
  checkTtl,
  normalizeResources,
} from '../options/option-checks.js';
export { checkAcquireOptions } from '../options/acquire-option-checks.js';
export { checkRedlockOptions } from '../options/redlock-option-checks.js';
export { DEFAULT_REDLOCK_OPTIONS } from '../options/options.js';
export { createLock, type LockInit, type LockOperations } from '../engine.js';
export { runWithLock } from '../lock/watchdog.js';
export { RedlockEmitter } from '../observability/events.js';
export { failFastOptions } from '../nodes/redis-client.js';
export { hashSlot, hashTag } from '../nodes/hash-slot.js';
