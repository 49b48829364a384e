import { randomBytes } from 'node:crypto';
import { RedlockArgumentError } from '../errors/errors.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { Lock } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import { NodeSubscriber } from '../nodes/node-subscriber.js';
import type { ResolvedRedlockOptions } from '../options/options.js';
import { fairAcquireOnNode, fairAliveOnNode, fairPlace, type FairMode, type FairPlace } from '../scripts/fair-acquire.js';
import { fairLeaveOnNode, fairReleaseOnNode } from '../scripts/fair-release.js';
import { releaseOnNode } from '../scripts/release.js';
import { jittered, onAbort } from '../lock/wait.js';

/** Settings of the fair queues of one Redlock. */
export interface FairQueueSettings {
  readonly keyPrefix: string;
  readonly quorum: number;
  /** How long a waiter's place outlives its process' last heartbeat. */
  readonly waiterTtlMs: number;
  readonly nodeTimeoutMs: number;
}

/** How a fair wait ended. */
export type FairWake = 'notice' | 'poll' | 'confirm';

/**
 * The fair (FIFO) queues of one Redlock: one notice channel per process and node, one
 * liveness lease per process, resource and node, one {@link FairSession} per waiting acquisition.
 * The design, and why mutual exclusion never depends on the queue, is in docs/fair-lock.md.
 */
export class FairQueue {
  /** This process' id in queue entries; base64url, so it never contains the ':' that ends it. */
  readonly processId = randomBytes(9).toString('base64url');
  readonly noticePrefix: string;
  /** How waits ended, for diagnostics and tests. */
  readonly stats: Record<FairWake, number> = { notice: 0, poll: 0, confirm: 0 };
  private readonly sessions = new Map<string, FairSession>();
  private readonly fairLocks = new WeakMap<Lock, { readonly queueKey: string; readonly ticket: number }>();
  private readonly need: number;
  private subscribers: NodeSubscriber[] | undefined;
  private acked: Uint8Array;
  private ackCount = 0;
  private armedWaiters: Array<() => void> = [];
  private beatTimer: NodeJS.Timeout | undefined;
  /** Liveness sets this process keeps a lease in: its waiting sessions there, and when the last one ended. */
  private readonly leases = new Map<string, { sessions: number; lastActive: number }>();
  private nextWaiter = 0;
  private readonly unsent = new Set<() => Promise<unknown>>();
  private closed = false;

  readonly settings: FairQueueSettings;

  constructor(
    private readonly nodes: readonly LockNode[],
    quorum: number,
    options: ResolvedRedlockOptions,
    private readonly names: KeyNames,
  ) {
    const { keyPrefix, nodeTimeoutMs, fairWaiterTtlMs: waiterTtlMs } = options;
    const settings = { keyPrefix, quorum, waiterTtlMs, nodeTimeoutMs };
    this.settings = settings;
    this.noticePrefix = `${settings.keyPrefix}fair-notice:`;
    this.acked = new Uint8Array(nodes.length);
    // Every quorum of nodes intersects this many: with them subscribed, no hand-off goes unheard.
    this.need = Math.max(1, nodes.length - settings.quorum + 1);
  }

  /** Waits in progress (tests and diagnostics). */
  get waiting(): number {
    return this.sessions.size;
  }

  /**
   * Runs an acquisition's attempts (`loop`), as a fair session when `fair`.
   * @throws {RedlockArgumentError} fair over several resources: a queue orders one resource.
   */
  around(resources: readonly string[], fair: boolean, loop: (session?: FairSession) => Promise<Lock>): Promise<Lock> {
    if (!fair) return loop();
    if (resources.length !== 1) {
      const hint = 'Lock several resources without fair, or take them one by one in a fixed order.';
      return Promise.reject(new RedlockArgumentError(`fair: true orders the waiters of one resource, got ${resources.length}. ${hint}`));
    }
    const resource = resources[0]!;
    const waiter = `${this.processId}:${(this.nextWaiter++).toString(36)}`;
    // Every key of the queue is the resource's: one slot with its lock key on Redis Cluster nodes.
    const session = new FairSession(this, this.nodes, waiter, {
      queue: this.names.key('fair-queue', resource),
      counter: this.names.key('fair-ticket', resource),
      alive: this.names.key('fair-alive', resource),
    });
    return session.run(loop);
  }

  /** Before a session's first attempt: our notices are subscribed and our lease on its resource is live. */
  async start(session: FairSession): Promise<void> {
    this.sessions.set(session.waiter, session);
    const lease = this.leases.get(session.aliveKey);
    if (lease) lease.sessions++;
    else this.leases.set(session.aliveKey, { sessions: 1, lastActive: performance.now() });
    // A lease still beating (this resource was waited on within the last TTL) costs no round.
    const beat = lease ? undefined : withTimeout(this.beat(session.aliveKey), this.settings.nodeTimeoutMs);
    if (!this.beatTimer) this.scheduleBeats();
    const subscribed = this.subscribe();
    await Promise.all([beat, subscribed]);
  }

  /** A session ended (with or without the lock). */
  end(session: FairSession): void {
    this.sessions.delete(session.waiter);
    const lease = this.leases.get(session.aliveKey);
    if (lease) {
      lease.sessions--;
      lease.lastActive = performance.now();
    }
  }

  /**
   * Whether `waiter`, at the head of a queue, is an entry of this process whose acquisition
   * ended: its leave was lost (a master that failed over before replicating it), and our live
   * lease would keep it at the head, ahead of every waiter, for as long as this process waits
   * there. Ids are never reused, so an id of ours without a session is stale for sure.
   */
  isStaleOwnWaiter(waiter: string): boolean {
    return waiter.startsWith(`${this.processId}:`) && !this.sessions.has(waiter);
  }

  /** Remembers a lock won fairly, so its release hands over to the queue's head. */
  granted(lock: Lock, queueKey: string, ticket: number): void {
    this.fairLocks.set(lock, { queueKey, ticket });
  }

  /**
   * The queue ticket `lock` was granted with: 0 when it took a free key with an empty queue,
   * undefined when it is not a fair lock. For order checks (the chaos checker).
   */
  ticketOf(lock: Lock): number | undefined {
    return this.fairLocks.get(lock)?.ticket;
  }

  /** The release command of `lock`: for a fair lock, one that hands over to the queue's head. */
  releaser(lock: Lock): (node: LockNode) => Promise<unknown> {
    const fair = this.fairLocks.get(lock);
    if (!fair) return (node) => releaseOnNode(node, lock.keys, lock.value);
    return (node) => fairReleaseOnNode(node, lock.keys[0]!, fair.queueKey, lock.value, this.noticePrefix);
  }

  /**
   * A leave that failed (node down, connection lost) is sent again with each heartbeat until
   * it lands: a live process' stale entry would otherwise block that node's queue.
   */
  retryLater(send: () => Promise<unknown>): void {
    if (!this.closed) this.unsent.add(send);
  }

  /** Stops the heartbeat and closes the notice connections. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.beatTimer);
    this.beatTimer = undefined;
    for (const wake of this.armedWaiters.splice(0)) wake();
    for (const s of [...this.sessions.values()]) s.wake('poll');
    await Promise.all((this.subscribers ?? []).map((s) => s.close()));
  }

  /** This process' lease in the liveness set `key`, on every node. */
  private beat(key: string): Promise<unknown> {
    const ttl = this.settings.waiterTtlMs;
    return Promise.allSettled(this.nodes.map((node) => fairAliveOnNode(node, key, this.processId, ttl)));
  }

  /**
   * Refreshes this process' lease on every resource it waits on fairly, on every node, every
   * third of the waiter TTL (and for one TTL after its last wait there, so a worker that
   * acquires again soon does not pay a round for it). A paused or dead process' leases end:
   * its waiters lose their places (see the `beat` mode of the acquire script). Leases are per
   * resource so that the acquire script finds them in its own slot on Redis Cluster nodes.
   */
  private scheduleBeats(): void {
    const ttl = this.settings.waiterTtlMs;
    const tick = (): void => {
      if (this.closed) return;
      const now = performance.now();
      for (const [key, lease] of this.leases) {
        if (lease.sessions > 0 || now - lease.lastActive <= ttl) void this.beat(key);
        else this.leases.delete(key);
      }
      for (const send of this.unsent)
        send().then(
          () => this.unsent.delete(send),
          () => undefined,
        );
      if (this.leases.size === 0 && this.unsent.size === 0) {
        this.beatTimer = undefined;
        return;
      }
      this.beatTimer = setTimeout(tick, ttl / 3);
      this.beatTimer.unref();
    };
    this.beatTimer = setTimeout(tick, ttl / 3);
    this.beatTimer.unref();
  }

  /** Subscribes the notice channel once; resolves when enough nodes confirmed it (or after a node timeout). */
  private subscribe(): Promise<void> {
    if (this.ackCount >= this.need || this.closed) return Promise.resolve();
    if (!this.subscribers) {
      const channel = `${this.noticePrefix}${this.processId}`;
      const events = {
        onMessage: (_node: number, _channel: string, message: string) => this.sessions.get(message)?.notice(_node),
        onAck: (node: number) => {
          if (this.acked[node] === 1) return;
          this.acked[node] = 1;
          if (++this.ackCount >= this.need) for (const wake of this.armedWaiters.splice(0)) wake();
        },
        onLost: (node: number) => {
          if (this.acked[node] === 1) this.ackCount--;
          this.acked[node] = 0;
        },
      };
      this.subscribers = this.nodes.map((node, i) => new NodeSubscriber(node.client, i, events));
      for (const s of this.subscribers) s.want(channel);
    }
    return withTimeout(new Promise<void>((resolve) => this.armedWaiters.push(resolve)), this.settings.nodeTimeoutMs);
  }
}

/** Resolves when `promise` settles or after `ms`, whichever is first; never rejects. */
function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
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
    private readonly queue: FairQueue,
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
