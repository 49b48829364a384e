export { Redlock } from './redlock.js';
export { Lock, type LockJSON, type LockState, type ReleaseResult } from './lock.js';
export { createLock, type EngineHealth, type EngineMemberHealth, type LockEngine, type LockInit, type LockOperations } from './engine.js';
export { runWithLock } from './watchdog.js';
export type { LockMode } from './read-write-lock.js';
export { primitiveOf, type PrimitiveLabel } from './primitive-label.js';
export {
  RedlockEmitter,
  type EventSink,
  type AcquireStartEvent,
  type AcquiredEvent,
  type ExtendEvent,
  type FailureEvent,
  type ForceReleaseEvent,
  type LostEvent,
  type RedlockEventMap,
  type RedlockEventName,
  type RedlockListener,
  type ReleaseEvent,
  type WaitEvent,
} from './events.js';
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
  type LockNotAcquiredDetails,
  type WaitOption,
} from './errors.js';
export type { NodeOutcome, NodeStatus } from './node-outcome.js';
export {
  DEFAULT_COHORT,
  DEFAULT_REDLOCK_OPTIONS,
  DEFAULT_RETRY,
  MAX_RESOURCE_LENGTH,
  MAX_PERMITS,
  MAX_TTL_MS,
  type AcquireOptions,
  type CohortOptions,
  type RedlockOptions,
  type ResolvedCohort,
  type ResolvedRedlockOptions,
  type ResolvedRetry,
  type RetryOptions,
  type UsingOptions,
} from './options.js';
export {
  checkAcquireOptions,
  checkCohort,
  checkFair,
  checkFencing,
  checkKeyPrefix,
  checkMaxHoldMs,
  checkMode,
  checkPermits,
  checkRedlockOptions,
  checkRetry,
  checkTimeoutMs,
  checkTtl,
  normalizeResources,
} from './option-checks.js';
export { failFastOptions, type RedisClientLike, type RedisNodeInput } from './redis-client.js';
export { describeNodeError } from './node-state.js';
export type { NodeReport } from './independence.js';
export type { ForceReleaseResult, InspectOptions, LockInspection, NodeLockState } from './operator.js';
export type { NodeHolder, NodePrimitives, QuorumHolder } from './operator-primitives.js';
export {
  listLocks,
  type ListedLock,
  type ListedLockKind,
  type ListLocksOptions,
  type LockListing,
  type LockListingSource,
  type NodeListing,
} from './lock-listing.js';
export { NodeCheckError } from './node-check.js';
export type { CheckNodesOptions, FindingCheck, FindingLevel, NodeCheckReport, NodeFinding } from './node-check.js';
export { RedisFencedStore, type FencedValue, type RedisFencedStoreOptions } from './fenced-store.js';
export type { ClusterNodeClient, NodeClient, NodeClientStream, SubscriberClient } from './node-client.js';
export type { NodeRedisClientLike } from './node-redis-client.js';
export type { NodeRedisClusterLike } from './node-redis-cluster-client.js';
export { InMemoryRedisClient, InMemoryRedisServer, type InMemoryRedisServerOptions } from './in-memory-node.js';
export type { ClusterNodeInput } from './cluster-input.js';
export { hashSlot, hashTag } from './hash-slot.js';
export { ReplicaSyncError, type ReplicaSyncOptions } from './replica-sync.js';
