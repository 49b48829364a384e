import type { Lock } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import { fairAcquireOnNode, fairPlace, type FairMode, type FairPlace } from '../scripts/fair-acquire.js';
import { fairLeaveOnNode } from '../scripts/fair-release.js';
import { jittered, onAbort } from '../lock/wait.js';

/** How a fair wait ended. */
export type FairWake = 'notice' | 'poll' | 'confirm';

/** What a session reads of, and reports to, the fair queues of its Redlock (fair-queue.ts). */
export interface FairSessionHost {
  readonly settings: { readonly quorum: number; readonly waiterTtlMs: number };
  /** How waits ended, for diagnostics and tests. */
  readonly stats: Record<FairWake, number>;
  readonly noticePrefix: string;
  /** Before a session's first attempt: its process' notices subscribed and its lease live. */
  start(session: FairSession): Promise<void>;
  /** A session ended (with or without the lock). */
  end(session: FairSession): void;
  /** A lock won fairly: its release hands over to the queue's head. */
  granted(lock: Lock, queueKey: string, ticket: number): void;
  /** Whether `waiter` is an entry of this process whose acquisition ended (its leave was lost). */
  isStaleOwnWaiter(waiter: string): boolean;
  /** Sends a failed leave again with each heartbeat until it lands. */
  retryLater(send: () => Promise<unknown>): void;
}

/**
 * One fair acquisition: its waiter id, its quorum ticket (the largest ticket a node gave
 * it; every later attempt writes that one ticket on every node, so the nodes agree on the
 * order), the notices naming it, and how its next attempt talks to the queue.
 */
export class FairSession {
  /** The ticket agreed across nodes; 0 until the first attempt queued. */
  ticket = 0;
  private mode: FairMode = 'first';
  private readonly places: Array<FairPlace | undefined>;
  private readonly seen: Uint8Array;
  private seenCount = 0;
  private wakeUp: ((reason: FairWake) => void) | undefined;
  /** The lock key of the last attempt (the leave script hands on only while it is free). */
  private lockKey = '';
  /** Set once the acquisition ended: a reply arriving later that queued us is undone. */
  private finished = false;

  constructor(
    private readonly queue: FairSessionHost,
    private readonly nodes: readonly LockNode[],
    readonly waiter: string,
    private readonly keys: { readonly queue: string; readonly counter: string; readonly alive: string },
  ) {
    this.places = new Array<FairPlace | undefined>(nodes.length);
    this.seen = new Uint8Array(nodes.length);
  }

  /** The resource's queue (a sorted set of waiters by ticket). */
  get queueKey(): string {
    return this.keys.queue;
  }

  /** The resource's liveness set, where this process keeps a lease while it waits. */
  get aliveKey(): string {
    return this.keys.alive;
  }

  /**
   * Runs `loop` (the acquisition's attempts) as this session: subscribed and alive first,
   * out of the queue afterwards (on every node, when it gave up without the lock).
   */
  async run(loop: (session: FairSession) => Promise<Lock>): Promise<Lock> {
    await this.queue.start(this);
    try {
      const lock = await loop(this);
      this.finished = true;
      this.queue.end(this);
      this.queue.granted(lock, this.queueKey, this.ticket);
      // A grant leaves the queue where it granted. A node that refused (we are queued there) or
      // failed leaves now; one still pending leaves when its reply comes (see send).
      lock.acquireNodes.forEach((o, i) => {
        if (o.status === 'held' || o.status === 'error' || o.status === 'timeout') this.leave(i);
      });
      return lock;
    } catch (err) {
      this.finished = true;
      this.queue.end(this);
      this.nodes.forEach((_, i) => this.leave(i));
      throw err;
    }
  }

  /** The next attempt's command per node (issued synchronously, as a round needs). */
  sender(lockKey: string, fenceKey: string | undefined, token: string, ttlMs: number): (node: LockNode) => Promise<unknown> {
    return (node) => this.send(node, lockKey, fenceKey, token, ttlMs);
  }

  private send(node: LockNode, lockKey: string, fenceKey: string | undefined, token: string, ttlMs: number): Promise<unknown> {
    const index = this.nodes.indexOf(node);
    // A round sends to node 0 first: notices before this attempt are superseded by it.
    if (index === 0) this.resetNotices();
    this.lockKey = lockKey;
    this.places[index] = undefined;
    const keys = { lock: lockKey, ...this.keys, ...(fenceKey ? { fence: fenceKey } : {}) };
    const sent = fairAcquireOnNode(node, keys, token, ttlMs, this.waiter, this.ticket, this.mode);
    return sent.then(
      (reply) => {
        const place = fairPlace(reply);
        if (place && this.finished) this.leave(index);
        else if (place) this.places[index] = place;
        // A stale entry of ours at the head: leave for it (the leave hands on to the next head).
        if (place?.head !== undefined && this.queue.isStaleOwnWaiter(place.head)) this.leave(index, place.head);
        return reply;
      },
      (err: unknown) => {
        if (this.finished) this.leave(index);
        throw err;
      },
    );
  }

  /** After a failed attempt: waits for a notice naming us, or the fallback poll. */
  async wait(retryMs: number, signal: AbortSignal | undefined, maxMs: number): Promise<void> {
    signal?.throwIfAborted();
    const reason = await this.waitFor(retryMs, signal, maxMs);
    this.queue.stats[reason]++;
    // A notice: we are the head where it came from; else look after the queue on the way.
    this.mode = this.ticket === 0 ? 'first' : reason === 'notice' ? 'take' : 'beat';
  }

  /** A notice from `node` that we are the head of its queue and the key is free there. */
  notice(node: number): void {
    if (this.seen[node] === 1) return;
    this.seen[node] = 1;
    if (++this.seenCount >= this.queue.settings.quorum) this.wake('notice');
  }

  /** Ends the current wait. */
  wake(reason: FairWake): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.(reason);
  }

  private waitFor(retryMs: number, signal: AbortSignal | undefined, maxMs: number): Promise<FairWake> {
    const { quorum, waiterTtlMs } = this.queue.settings;
    const tickets = new Set<number>();
    const ranks: number[] = [];
    for (const place of this.places) {
      if (!place) continue;
      tickets.add(place.ticket);
      this.ticket = Math.max(this.ticket, place.ticket);
      ranks.push(place.rank);
    }
    // After the first round, nodes that gave different tickets (concurrent arrivals, a node
    // restarted empty) or did not queue us (a partial grant) get the agreed ticket at once, so
    // no two waiters each see themselves first on different nodes.
    if (this.mode === 'first' && this.ticket > 0 && (tickets.size > 1 || ranks.length < quorum)) {
      return Promise.resolve('confirm');
    }
    if (this.seenCount >= quorum) return Promise.resolve('notice');
    ranks.sort((a, b) => a - b);
    // Head on a quorum: poll at the caller's rate (the holder may expire without a notice);
    // behind it, notices cover us, and the poll only keeps our place and drops dead heads.
    const head = (ranks[quorum - 1] ?? Infinity) <= 0;
    const pollMs = Math.min(head ? retryMs : jittered(waiterTtlMs / 3, retryMs), maxMs);
    return new Promise<FairWake>((resolve, reject) => {
      const stop = signal
        ? onAbort(signal, () => {
            clearTimeout(timer);
            this.wakeUp = undefined;
            reject(signal.reason);
          })
        : undefined;
      const timer = setTimeout(() => this.wake('poll'), Math.max(0, pollMs));
      this.wakeUp = (reason) => {
        clearTimeout(timer);
        stop?.();
        resolve(reason);
      };
    });
  }

  private resetNotices(): void {
    this.seen.fill(0);
    this.seenCount = 0;
  }

  /** Leaves the queue on node `i`, as `waiter` (default: ours); sent, not awaited; retried with the heartbeat when it fails. */
  private leave(i: number, waiter = this.waiter): void {
    const node = this.nodes[i]!;
    const { lockKey, queueKey } = this;
    const send = (): Promise<unknown> => fairLeaveOnNode(node, lockKey, queueKey, waiter, this.queue.noticePrefix);
    send().catch(() => this.queue.retryLater(send));
  }
}
