/**
 * The root of `@redlock-nest/core`: what an application writes. The engine (`Redlock`, or any
 * {@link LockEngine}), the {@link Lock} it hands out, their options, the errors they throw, the
 * fenced store and the event types. Everything else lives in a subpath entry:
 * `@redlock-nest/core/testing` (the in-memory Redis for tests), `@redlock-nest/core/operator`
 * (listing, inspection, node checks, health probes) and `@redlock-nest/core/internal` (what the
 * sibling packages share; not covered by semver). The names below are counted by a test
 * (test/core/public-api.test.ts): adding one is a decision, not an accident.
 *
 * @example
 * ```ts
 * import { LockNotAcquiredError, Redlock } from '@redlock-nest/core';
 *
 * const redlock = new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']);
 * try {
 *   await redlock.using('report:daily', 10_000, async (lock) => buildReport({ signal: lock.signal }));
 * } catch (err) {
 *   if (!(err instanceof LockNotAcquiredError)) throw err;
 * }
 * ```
 *
 * @packageDocumentation
 */
export { Redlock } from './redlock.js';
export type { LockEngine } from './engine.js';
export { Lock } from './lock/lock.js';
export type { LockJSON, LockState, ReleaseResult } from './lock/lock-types.js';
export type { LockMode } from './primitives/read-write-lock.js';
export { primitiveOf, type PrimitiveLabel } from './primitives/primitive-label.js';
export type { RedlockEventMap, RedlockEventName, RedlockListener } from './observability/events.js';
export {
  RedlockError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  LockLostError,
  RedlockArgumentError,
  RedlockClosedError,
  NodeIndependenceError,
  StaleFencingTokenError,
  type AcquireFailureDetails,
  type LockLostReason,
} from './errors/errors.js';
export type { NodeOutcome } from './errors/node-outcome.js';
export type { AcquireOptions, CohortOptions, RedlockOptions, RestartRuleOption, RetryOptions, UsingOptions } from './options/options.js';
export type { RedisNodeInput } from './nodes/redis-client.js';
export type { NodeClient } from './nodes/node-client.js';
export { ReplicaSyncError, type ReplicaSyncOptions } from './nodes/replica-sync.js';
export { RedisFencedStore, type FencedValue, type RedisFencedStoreOptions } from './fencing/fenced-store.js';
