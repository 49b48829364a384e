export { Redlock } from './redlock.js';
export { Lock, type LockJSON, type LockState, type ReleaseResult } from './lock/lock.js';
export { createLock, type EngineHealth, type EngineMemberHealth, type LockEngine, type LockInit, type LockOperations } from './engine.js';
export { runWithLock } from './lock/watchdog.js';
export type { LockMode } from './primitives/read-write-lock.js';
export { primitiveOf, type PrimitiveLabel } from './primitives/primitive-label.js';
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
} from './observability/events.js';
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
} from './errors/errors.js';
export type { NodeOutcome, NodeStatus } from './errors/node-outcome.js';
export {
  DEFAULT_COHORT,
  DEFAULT_REDLOCK_OPTIONS,
  DEFAULT_RETRY,
  MAX_RESOURCE_LENGTH,
  MAX_PERMITS,
  MAX_TTL_MS,
  type AcquireOptions,
  type CohortOptions,
  type RestartRuleOption,
  type RedlockOptions,
  type ResolvedCohort,
  type ResolvedRedlockOptions,
  type ResolvedRetry,
  type RetryOptions,
  type UsingOptions,
} from './options/options.js';
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
} from './options/option-checks.js';
export { failFastOptions, type RedisClientLike, type RedisNodeInput } from './nodes/redis-client.js';
export { describeNodeError } from './nodes/node-state.js';
export type { NodeReport } from './safety/independence.js';
export type { ForceReleaseResult, InspectOptions, LockInspection, NodeLockState } from './operator/operator.js';
export type { NodeHolder, NodePrimitives, QuorumHolder } from './operator/operator-primitives.js';
export {
  listLocks,
  type ListedLock,
  type ListedLockKind,
  type ListLocksOptions,
  type LockListing,
  type LockListingSource,
  type NodeListing,
} from './operator/lock-listing.js';
export { NodeCheckError } from './safety/node-check.js';
export type { CheckNodesOptions, FindingCheck, FindingLevel, NodeCheckReport, NodeFinding } from './safety/node-check.js';
export { RedisFencedStore, type FencedValue, type RedisFencedStoreOptions } from './fencing/fenced-store.js';
export type { ClusterNodeClient, NodeClient, NodeClientStream, SubscriberClient } from './nodes/node-client.js';
export type { NodeRedisClientLike } from './nodes/node-redis-client.js';
export type { NodeRedisClusterLike } from './nodes/node-redis-cluster-client.js';
export { InMemoryRedisClient, InMemoryRedisServer, type InMemoryRedisServerOptions } from './testing/in-memory-node.js';
export type { ClusterNodeInput } from './nodes/cluster-input.js';
export { hashSlot, hashTag } from './nodes/hash-slot.js';
export { ReplicaSyncError, type ReplicaSyncOptions } from './nodes/replica-sync.js';
