import { acquireRound, stoppedAtArbiter, type ContentionHints } from '../rounds/arbiter-round.js';
import type { AttemptFailure } from '../rounds/attempt-failure.js';
import { FenceCatchUp } from '../fencing/fencing.js';
import { settleGrant } from '../fencing/grant-settle.js';
import { Lock } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { LockContext } from '../lock/lock-context.js';
import { acquireOnNode, parseAcquireReply, type QueueFollowUp } from '../scripts/acquire.js';
import { releasePartialHolds } from '../scripts/release.js';
import { unlockOnNode } from '../scripts/wake-queue.js';

/** What one attempt of a plain lock needs besides its Redlock. @internal */
export interface MutexAttempt {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly fenceKeys: readonly string[] | undefined;
  readonly token: string;
  readonly ttlMs: number;
  /** Under contention: the key whose arbiter node is asked first (see arbiter-round.ts). */
  readonly arbiterKey: string | undefined;
  readonly contention: ContentionHints;
  /**
   * The nodes where an earlier attempt of this acquisition (same token) may have set our key:
   * it granted, or its answer is unknown. Its release there may have been lost, so a refused
   * `SET NX` there is followed by the owner-checked reclaim (see acquireOnNode); elsewhere a
   * refusal is someone else's key, and only its PTTL is read. A failed attempt adds its nodes.
   * Undefined: no reclaim (a fair waiter's take).
   */
  readonly mayHold: Set<LockNode> | undefined;
  /** Replaces the acquire script (a fair waiter's take, see fair-queue.ts). */
  readonly send: ((node: LockNode) => Promise<unknown>) | undefined;
  /**
   * Addressed wake-ups (a plain lock of one resource on plain nodes): the key's arbiter, where a
   * refused attempt queues this process and where the release of a partial hold wakes the next.
   */
  readonly queue?: { readonly arbiter: LockNode | undefined; readonly followUp: QueueFollowUp };
}

/**
 * One attempt of a plain lock, no retries: the acquire round (arbitrated under contention),
 * the fencing settle when fenced, and the validity check. A failed attempt releases what it
 * may have set; a won one is counted among the host's active locks.
 * @internal
 */
export async function attemptMutex(host: LockContext, a: MutexAttempt): Promise<Lock | AttemptFailure> {
  const { resources, keys, fenceKeys, token, ttlMs, send } = a;
  const start = performance.now();
  const timeoutMs = host.nodeTimeout(ttlMs);
  const sendKeys = fenceKeys ? [...keys, ...fenceKeys] : keys;
  const catchUp = fenceKeys ? new FenceCatchUp(host.nodes, fenceKeys) : undefined;
  host.restarts?.noteTtl(ttlMs);
  const queue = a.queue;
  const round = await acquireRound(
    host.nodes,
    (node) =>
      host.counted(
        node,
        send
          ? send(node)
          : acquireOnNode(
              node,
              sendKeys,
              token,
              ttlMs,
              fenceKeys !== undefined,
              a.mayHold?.has(node),
              node === queue?.arbiter ? queue.followUp : undefined,
            ),
      ),
    parseAcquireReply,
    { quorum: host.quorum, timeoutMs, early: true, ...(catchUp ? { late: catchUp.late } : {}) },
    a.arbiterKey,
    a.contention,
  );
  const { failure, fencingTokens, expiresAtMono } = await settleGrant(
    host,
    round,
    fenceKeys && catchUp ? { resources, keys: fenceKeys, catchUp } : undefined,
    { start, ttlMs, timeoutMs },
  );
  if (failure) {
    // Lost at the arbiter: nothing was sent elsewhere, and the arbiter refused.
    if (stoppedAtArbiter(round)) return failure;
    host.nodes.forEach((node, i) => {
      if (round.outcomes[i]!.status !== 'held') a.mayHold?.add(node);
    });
    if (queue) {
      // Plain nodes apply a connection's commands in order: sent, not awaited (see releasePartialHolds).
      // A grant given back on the arbiter queues this process again at its place and wakes nobody:
      // the lock is held on the other nodes, and their holder's release wakes the head.
      host.nodes.forEach((node, i) => {
        if (round.outcomes[i]!.status === 'held') return;
        const wake =
          node === queue.arbiter ? { queue: queue.followUp.queue, requeueScore: queue.followUp.requeue(), next: false } : undefined;
        unlockOnNode(node, keys[0]!, token, wake).catch(() => undefined);
      });
      return failure;
    }
    // Awaited: on a cluster node a late release (redirected or re-sent) could land after the retry's grant.
    await releasePartialHolds(host.nodes, round.outcomes, keys, token);
    return failure;
  }
  const lock = new Lock(
    { resources, keys, value: token, expiresAtMono, nodes: round.outcomes, ...(fencingTokens ? { fencingTokens } : {}) },
    host.ops,
  );
  host.active.add(lock);
  return lock;
}
