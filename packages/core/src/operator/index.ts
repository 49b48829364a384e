/**
 * `@redlock-nest/core/operator`: what the operators' tools use, the `redlock-nest` CLI and the
 * Nest dashboard among them. {@link listLocks} lists the locks held on the nodes; the types
 * describe what `Redlock.inspect`, `forceRelease`, `checkNodes`, `checkIndependence` and
 * `probeHealth` answer, and {@link NodeCheckError} is what a failed node check throws.
 * An application that only takes locks needs none of it.
 *
 * @example
 * ```ts
 * import { Redlock } from '@redlock-nest/core';
 * import { listLocks, type LockListing } from '@redlock-nest/core/operator';
 *
 * const redlock = new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']);
 * const listing: LockListing = await listLocks(redlock, { maxPages: 5 });
 * ```
 *
 * @packageDocumentation
 */
export {
  listLocks,
  type ListedLock,
  type ListedLockKind,
  type ListLocksOptions,
  type LockListing,
  type LockListingSource,
  type NodeListing,
} from './lock-listing.js';
export type { ForceReleaseResult, InspectOptions, LockInspection, NodeLockState } from './operator.js';
export type { NodeHolder, NodePrimitives, QuorumHolder } from './operator-primitives.js';
export { NodeCheckError } from '../safety/node-check.js';
export type { CheckNodesOptions, FindingCheck, FindingLevel, NodeCheckReport, NodeFinding } from '../safety/node-check.js';
export type { NodeReport } from '../safety/independence.js';
export type { EngineHealth, EngineMemberHealth } from '../engine.js';
