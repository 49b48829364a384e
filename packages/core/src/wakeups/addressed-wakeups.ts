import type { LockNode } from '../nodes/lock-node.js';
import { arbiterOf } from '../rounds/arbiter-round.js';
import type { QueueFollowUp } from '../scripts/acquire.js';
import { releaseOnNode } from '../scripts/release.js';
import { isDenied, leaveQueueOnNode, unlockOnNode, type WakeQueue } from '../scripts/wake-queue.js';
import type { ReleaseNotifier } from './release-notifier.js';

/** What the addressed wake-ups of one Redlock read: its nodes, notices and node rules. @internal */
export interface AddressedWakeupsContext {
  readonly nodes: readonly LockNode[];
  readonly notices: ReleaseNotifier;
  readonly nodeTimeoutMs: number;
  readonly onWarning: (message: string) => void;
  /** Whether a node may be a key's arbiter now (the restart rule may keep it out). */
  readonly usable: (node: LockNode) => boolean;
}

/** A queue follow-up of one acquisition; `end()` once it gave up (see {@link AddressedWakeups.followUp}). @internal */
export type AcquisitionFollowUp = QueueFollowUp & { end(): void };

/**
 * Addressed wake-ups of plain locks (scripts/wake-queue.ts), as one Redlock uses them: where
 * its process queues for a key and is woken, how a refused attempt queues it, how it leaves a
 * queue nobody of its own waits in any more, and the release that wakes the next process.
 * @internal
 */
export class AddressedWakeups {
  constructor(
    private settings: WakeQueue | undefined,
    private readonly ctx: AddressedWakeupsContext,
  ) {}

  /**
   * Where this process queues and is woken. Undefined on Redis Cluster nodes (their notices are
   * sharded), when waits do not go through the release notices, and once the ACL user was found
   * unable to queue (then waiters wake by the key's release notices).
   */
  get queue(): WakeQueue | undefined {
    return this.settings;
  }

  /** The ACL refused a wake-up script: back to release notices on the key, with one warning that names the fix. */
  denied(err: unknown): void {
    if (!this.settings) return;
    this.settings = undefined;
    const text = err instanceof Error ? err.message : String(err);
    this.ctx.onWarning(
      `the ACL user may not queue waiters (${text.slice(0, 120)}): waiters fall back to release notices on the key. Grant +zadd +zpopmin +zcard +zscore +zrem (docs/security.md).`,
    );
  }

  /** How a plain lock's refused attempt on `key`'s arbiter queues this process. Only while {@link queue} is set. */
  followUp(key: string): AcquisitionFollowUp {
    const notices = this.ctx.notices;
    // A key found free once is attempted again at once; found free again (the lock held on the
    // other nodes, not on the arbiter), the process waits for its turn instead of spinning.
    let freeInARow = 0;
    let ended = false;
    // A follow-up of an attempt still under way when its acquisition gave up lands after the leave:
    // leave again, after it (same connection, so in order).
    const queuedNow = (): void => {
      notices.places.noteQueued(key);
      if (ended) setImmediate(() => void this.leave(key));
    };
    return {
      queue: this.settings!,
      denied: (err) => this.denied(err),
      score: () => notices.places.queueScore(key),
      queued: () => {
        freeInARow = 0;
        queuedNow();
      },
      free: () => {
        queuedNow();
        if (++freeInARow === 1) notices.places.noteFree(key);
      },
      requeue: () => {
        queuedNow();
        return notices.places.queueScore(key);
      },
      end: () => {
        ended = true;
      },
    };
  }

  /** Takes this process out of `key`'s queue when no acquisition of its own waits there. */
  async leave(key: string): Promise<void> {
    const queue = this.settings;
    if (!queue || !this.ctx.notices.places.leaveIfIdle(key)) return;
    const arbiter = this.node(key, this.ctx.nodeTimeoutMs);
    // A node that does not answer keeps the entry until the queue's TTL: a hint, never the lock.
    await (arbiter ? leaveQueueOnNode(arbiter, queue, key).catch(() => undefined) : undefined);
  }

  /** Leaves every queue this process is in (its Redlock closes). */
  async leaveAll(): Promise<void> {
    await Promise.all(this.ctx.notices.places.queuedKeys().map((key) => this.leave(key)));
  }

  /** The node where `key`'s waiters queue (the arbiter of arbiter-round.ts), or undefined when none qualifies. */
  node(key: string, timeoutMs: number): LockNode | undefined {
    const { nodes, usable } = this.ctx;
    const i = arbiterOf(nodes, key, timeoutMs, usable);
    return i < 0 ? undefined : nodes[i];
  }

  /**
   * The release of a plain lock of one resource, `key`, held with `token`: the arbiter wakes the
   * next queued process (and queues this one again behind it when `waiting` waiters of ours are
   * left); the other nodes only delete. Undefined while there is no {@link queue}.
   */
  release(key: string, token: string, waiting: number): ((node: LockNode) => Promise<unknown>) | undefined {
    const queue = this.settings;
    if (!queue) return undefined;
    const notices = this.ctx.notices;
    // Its score was renewed when it won (noteWon): queued again, it goes behind those waiting now.
    const requeueScore = waiting + notices.places.waitingFor(key) > 0 ? notices.places.queueScore(key) : undefined;
    if (requeueScore !== undefined) notices.places.noteQueued(key);
    const arbiter = this.node(key, this.ctx.nodeTimeoutMs);
    const wake = { queue, requeueScore };
    return (node) =>
      node !== arbiter
        ? unlockOnNode(node, key, token, undefined)
        : unlockOnNode(node, key, token, wake).catch((err: unknown) => {
            if (!isDenied(err)) throw err;
            this.denied(err);
            return releaseOnNode(node, [key], token);
          });
  }
}
