import { settleExtend } from '../lock/extend-outcome.js';
import type { LockContext } from '../lock/lock-context.js';
import type { Lock } from '../lock/lock.js';
import type { ReleaseResult } from '../lock/lock-types.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { LockNode } from '../nodes/lock-node.js';
import { checkTtlOverDrift } from '../options/option-checks.js';
import type { FairQueue } from '../primitives/fair-queue.js';
import { primitiveOf } from '../primitives/primitive-label.js';
import { nodeScriptsOf } from '../primitives/read-write-lock.js';
import { runRound } from '../rounds/round.js';
import { extendOnNode, parseExtendReply } from '../scripts/extend.js';
import { parseReleaseReply } from '../scripts/release.js';
import type { AddressedWakeups } from '../wakeups/addressed-wakeups.js';
import type { ReleaseNotifier } from '../wakeups/release-notifier.js';

/** What the extend and release rounds of one Redlock's locks read. @internal */
export interface LockRoundsHost {
  readonly context: LockContext;
  readonly notices: ReleaseNotifier;
  readonly wakeups: AddressedWakeups;
  readonly fair: FairQueue;
}

/** A ttl the drift allowance eats entirely could never give a valid lock: a config error, not an outage. @internal */
export function checkValidity(context: LockContext, ttlMs: number): void {
  checkTtlOverDrift(ttlMs, context.drift(ttlMs));
}

/**
 * Extends a held lock on every node (owner-checked), for `ttlMs` from now. Its new validity
 * counts from the round's start, drift subtracted, as an acquisition's does.
 * @internal
 */
export async function extendLock(host: LockRoundsHost, lock: Lock, ttlMs: number): Promise<readonly NodeOutcome[]> {
  const ctx = host.context;
  checkValidity(ctx, ttlMs);
  const start = performance.now();
  ctx.restarts?.noteTtl(ttlMs);
  const extend = nodeScriptsOf(lock)?.extend ?? extendOnNode;
  const round = await runRound(ctx.nodes, (node) => ctx.counted(node, extend(node, lock.keys, lock.value, ttlMs)), parseExtendReply, {
    quorum: ctx.quorum,
    timeoutMs: ctx.nodeTimeout(ttlMs),
    early: true,
  });
  return settleExtend(lock, round, start + ttlMs - ctx.drift(ttlMs), ctx.quorum);
}

/**
 * A release on the nodes (not a hand-off); `yieldTo` > 0: a cohort gives way to that many waiting
 * processes; `waiting`: waiters of this instance left by a cohort, which attempt after it.
 * Resolves once a majority answered: then the lock is free for others. The remaining nodes'
 * releases are already sent and still apply; their outcomes stay 'pending'.
 * @internal
 */
export async function releaseToNodes(host: LockRoundsHost, lock: Lock, yieldTo: number, waiting: number): Promise<ReleaseResult> {
  const ctx = host.context;
  host.notices.noteRelease(lock.keys, yieldTo);
  ctx.active.delete(lock);
  const scripted = nodeScriptsOf(lock)?.release;
  const release = scripted
    ? (node: LockNode) => scripted(node, lock.keys, lock.value)
    : (addressedRelease(host, lock, waiting) ?? host.fair.releaser(lock));
  const round = await runRound(ctx.nodes, release, parseReleaseReply, {
    quorum: ctx.quorum,
    timeoutMs: ctx.options.nodeTimeoutMs,
    early: false,
    settle: ctx.quorum,
  });
  return { released: round.ok, nodes: round.outcomes };
}

/**
 * The release of a plain lock of one resource with addressed wake-ups: the arbiter wakes the next
 * queued process (and queues this one again behind it when waiters of ours are left); the other
 * nodes only delete. Undefined for every other lock.
 */
function addressedRelease(host: LockRoundsHost, lock: Lock, waiting: number): ((node: LockNode) => Promise<unknown>) | undefined {
  if (lock.keys.length !== 1 || primitiveOf(lock) !== undefined || host.fair.ticketOf(lock) !== undefined) return undefined;
  return host.wakeups.release(lock.keys[0]!, lock.value, waiting);
}
