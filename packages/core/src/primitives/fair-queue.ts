import { randomBytes } from 'node:crypto';
import { RedlockArgumentError } from '../errors/errors.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { Lock } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import { NodeSubscriber } from '../nodes/node-subscriber.js';
import type { ResolvedRedlockOptions } from '../options/options.js';
import { fairAliveOnNode } from '../scripts/fair-acquire.js';
import { fairReleaseOnNode } from '../scripts/fair-release.js';
import { releaseOnNode } from '../scripts/release.js';
import { FairSession, type FairSessionHost, type FairWake } from './fair-session.js';

/** Settings of the fair queues of one Redlock. */
export interface FairQueueSettings {
  readonly keyPrefix: string;
  readonly quorum: number;
  /** How long a waiter's place outlives its process' last heartbeat. */
  readonly waiterTtlMs: number;
  readonly nodeTimeoutMs: number;
}

/**
 * The fair (FIFO) queues of one Redlock: one notice channel per process and node, one
 * liveness lease per process, resource and node, one {@link FairSession} per waiting acquisition.
 * The design, and why mutual exclusion never depends on the queue, is in docs/fair-lock.md.
 */
export class FairQueue implements FairSessionHost {
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
