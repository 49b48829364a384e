import type { RedisClientLike } from '../nodes/redis-client.js';
import { NodeSubscriber } from '../nodes/node-subscriber.js';
import { onAbort } from '../lock/wait.js';
import {
  covers,
  deliverNotice,
  enqueue,
  pollDelay,
  schedulePoll,
  type Channel,
  type Entry,
  type NoticeRules,
  type WaiterState,
  type WakeReason,
} from './notice-channel.js';
import { ChannelSet } from './channel-set.js';
import { QueuePlaces } from './queue-places.js';
import { WakeChannel } from './wake-channel.js';

export type { WakeReason } from './notice-channel.js';

/** Counters of how waits ended. */
export interface NotifierStats {
  notice: number;
  poll: number;
  armed: number;
  pending: number;
  closed: number;
  aborted: number;
  /** Waits ended because a lock of this process now holds their keys (they wait for its hand-off instead). */
  cohort: number;
}

/** Addressed wake-ups (see scripts/wake-queue.ts): this process' channel, and what to do with an unwanted turn. */
export interface AddressedWakeups {
  /** This process' wake-up channel: a message on it names the lock key whose turn it is. */
  readonly channel: string;
  /** Our turn came for `key` on node `node` but nobody here waits for it any more: pass it on. */
  pass(node: number, key: string): void;
  /** A queued waiter's fallback poll, at least: its turn comes by message, the poll is only a safety net. */
  readonly queuedPollMs: number;
}

export interface ReleaseNotifierOptions {
  /** Nodes a lock needs; a channel is "armed" once n − quorum + 1 nodes confirmed it (every quorum intersects that set). */
  readonly quorum: number;
  /**
   * How long a channel stays subscribed after its last waiter returned. The acquire loop
   * calls `wait` again after one attempt, so this must exceed one attempt's duration;
   * otherwise every retry would resubscribe and lose the "armed before the attempt" guarantee.
   */
  readonly lingerMs: number;
  /** Addressed wake-ups for waits that ask for them (plain locks on plain nodes); undefined: broadcast notices only. */
  readonly addressed?: AddressedWakeups;
  /** The arbiter node of a key (arbiter-round.ts): its notice alone wakes a waiter. */
  readonly arbiterOf?: (key: string) => number;
  /** Whether node `node` is known down: a channel arms without its subscription there. */
  readonly isDown?: (node: number) => boolean;
  /** Channels whose notice wakes every waiter of this process, not one: a read phase opened (read-write-lock.ts). */
  readonly wakesAll?: (channel: string) => boolean;
}

/**
 * Wakes lock waiters when a holder releases, instead of polling.
 *
 * - One subscriber connection per node, opened on the first wait (a Redlock whose
 *   acquisitions never wait opens none), closed by `close()`.
 * - A release publishes on the lock key's channel on every node that held it; a notice
 *   from ANY node starts a "release generation". Each generation wakes ONE waiter of
 *   this process (the oldest acquisition), so a release does not start a stampede of
 *   local attempts. A waiter that lost keeps its place at the head of the queue.
 * - No missed wake-up: a wait returns at once if its channel was not yet armed before
 *   the attempt that just failed (the attempt is then repeated under the subscription),
 *   and a notice that arrived while nobody waited is kept for the next waiter.
 * - The jittered poll delay still ends every wait, against lost messages, an expired
 *   (never released) lock, or nodes whose subscriber is down. Only the head of a queue
 *   polls at that rate (see {@link pollDelay}); no poll fires after the caller's deadline.
 */
export class ReleaseNotifier {
  readonly stats: NotifierStats = { notice: 0, poll: 0, armed: 0, pending: 0, closed: 0, aborted: 0, cohort: 0 };
  private readonly subscribers: NodeSubscriber[];
  /** This process' wake-up channel, with addressed wake-ups. */
  private readonly wake: WakeChannel | undefined;
  private readonly addressed: AddressedWakeups | undefined;
  private readonly isDown: ((node: number) => boolean) | undefined;
  private readonly channels: ChannelSet;
  /** This process' place in each key's queue on its arbiter (addressed wake-ups). */
  readonly places: QueuePlaces;
  private readonly waiters = new WeakMap<readonly string[], WaiterState>();
  private readonly need: number;
  private readonly lingerMs: number;
  private nextTicket = 0;
  /** Longest recent failed attempt (ms): how far back a first wait looks for a missed notice. */
  private attemptMs: number;
  private closed = false;
  /** How long a waiter woken by another process's release waits before it attempts (set by the cohorts). */
  turnDelay: ((key: string) => number) | undefined;
  /** What delivering a notice reads (see deliverNotice); `turnDelay` is read when it is set. */
  private readonly rules: NoticeRules;

  constructor(clients: readonly RedisClientLike[], options: ReleaseNotifierOptions) {
    const events = {
      onMessage: (node: number, channel: string, message: string) => this.onMessage(node, channel, message),
      onAck: (node: number, channel: string) => this.onAck(node, channel),
      onLost: (node: number) => this.onLost(node),
    };
    this.subscribers = clients.map((client, i) => new NodeSubscriber(client, i, events));
    this.need = Math.max(1, clients.length - options.quorum + 1);
    this.lingerMs = options.lingerMs;
    this.attemptMs = options.lingerMs;
    this.addressed = options.addressed;
    this.isDown = options.isDown;
    this.rules = { quorum: options.quorum, wakesAll: options.wakesAll, turnDelay: (key) => this.turnDelay?.(key) ?? 0 };
    const subscriptions = {
      nodes: clients.length,
      want: (channel: string) => {
        for (const s of this.subscribers) s.want(channel);
      },
      drop: (channel: string) => {
        for (const s of this.subscribers) s.drop(channel);
      },
    };
    this.wake = options.addressed ? new WakeChannel(options.addressed.channel, clients.length, this.need, subscriptions.want) : undefined;
    this.channels = new ChannelSet(subscriptions, options.lingerMs, this.wake, options.arbiterOf);
    this.places = new QueuePlaces(this.channels);
  }

  /** Subscriber connections opened so far. */
  get openConnections(): number {
    return this.subscribers.filter((s) => s.opened).length;
  }

  /** Waits in progress. */
  get waiting(): number {
    const entries = new Set<Entry>();
    for (const c of this.channels.values()) for (const e of c.queue) entries.add(e);
    return entries.size;
  }

  /** Channels currently subscribed (or lingering). */
  get channelCount(): number {
    return this.channels.size;
  }

  /** Resolves once no channel is subscribed any more (after the linger time). */
  whenIdle(): Promise<void> {
    return this.channels.whenIdle();
  }

  /**
   * Waits until a release of one of `keys` is noticed, or the fallback poll (`ms` at the
   * head of the queue, longer behind it) fires, or `maxMs` pass, or `signal` aborts.
   * `keys` must be the same array across one acquisition's retries: its identity keeps
   * the waiter's place in the queue and tells when its last attempt started.
   */
  wait(
    keys: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    maxMs = Infinity,
    addressed = false,
    /** No attempt preceded this wait (a new acquisition waiting for its process' turn): nothing to repeat once armed. */
    unattempted = false,
  ): Promise<WakeReason> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.resolve('closed');
    // Addressed only for one key (a multi-resource lock waits for broadcast notices) and when configured.
    const byTurn = addressed && keys.length === 1 && this.wake !== undefined;
    const now = performance.now();
    let state = this.waiters.get(keys);
    if (state) this.learnAttempt(now - state.lastReturnAt);
    // A first wait does not know when its attempt started: it assumes the attempt took as
    // long as the slowest recent one, trusting only a channel armed before that and taking
    // a notice newer than that. (Taking older notices would make every new waiter repeat
    // its attempt for a release that its first attempt already saw.)
    const since = state ? state.lastReturnAt : now - this.attemptMs;
    if (!state) {
      state = { ticket: this.nextTicket++, lastReturnAt: now, turn: false };
      this.waiters.set(keys, state);
    }
    const channels = keys.map((key) => this.channels.open(key, byTurn));
    // An arbiter found down since the last confirmation no longer holds the channel back (see covers).
    for (const c of channels) if (c.armedAt === Infinity && covers(c, this.need, this.isDown)) c.armedAt = now;
    let immediate: WakeReason | undefined;
    for (const c of channels) {
      // Our own release, sent before this attempt on the same connections, was already
      // applied when the attempt ran: its notice is news only to waits older than it.
      if (c.pendingAt > since && !(c.pendingOwn && c.ownReleaseAt < since)) {
        // A read phase's notice is for every reader between two attempts: the first to look
        // must not take it from the others (each takes it once: its next wait looks from later).
        if (!this.rules.wakesAll?.(c.name)) c.pendingAt = -Infinity;
        immediate = 'pending';
      }
    }
    const armedBefore = unattempted || channels.every((c) => this.armedAt(c, byTurn) <= since);
    if (immediate) return Promise.resolve(this.finish(state, channels, immediate));

    return new Promise<WakeReason>((resolve, reject) => {
      const waiterState = state;
      let settled = false;
      // One listener per signal, however many waits share it.
      const stopAbort = signal
        ? onAbort(signal, () => {
            if (settled) return;
            settled = true;
            clearTimeout(entry.timer);
            this.dequeue(entry);
            this.finish(waiterState, channels, 'aborted');
            reject(signal.reason);
          })
        : undefined;
      const entry: Entry = {
        ticket: waiterState.ticket,
        channels,
        addressed: byTurn,
        resolve: (reason, turn = false) => {
          if (settled) return;
          settled = true;
          clearTimeout(entry.timer);
          stopAbort?.();
          this.dequeue(entry);
          resolve(this.finish(waiterState, channels, reason, turn));
        },
        pollMs: ms,
        notAfter: now + maxMs,
        pollAt: Infinity,
        timer: undefined,
      };
      let place = Infinity;
      for (const c of channels) place = Math.min(place, enqueue(c, entry));
      // Queued on the arbiter: the turn comes by message, so the poll is only a safety net.
      const pollMs = byTurn && channels[0]!.queued ? Math.max(ms, this.addressed!.queuedPollMs) : ms;
      // Turns across processes (lock-cohort.ts): a process that just gave way polls later too.
      schedulePoll(entry, pollDelay(pollMs, place) + (byTurn ? 0 : (this.turnDelay?.(keys[0]!) ?? 0)), now);
      // Not armed before the failed attempt: a release may have slipped in between.
      // Return as soon as the subscription is confirmed, to repeat the attempt under it.
      if (!armedBefore && channels.every((c) => this.armedAt(c, byTurn) !== Infinity)) entry.resolve('armed');
    });
  }

  /**
   * Records that this process is releasing `keys` (its own notices then wake no one needlessly).
   * `yieldTo` > 0: a cohort gives the lock back because that many other processes wait (see
   * lock-cohort.ts). The notices of this release then wake none of our waiters: they attempt
   * after the next release (another process's turn) or at their poll. (Letting one release per
   * waiting process pass, for turns in a round, stalled: with miscounts every process let the
   * same release pass, and the lock sat free until a poll.)
   */
  noteRelease(keys: readonly string[], yieldTo = 0): void {
    if (this.channels.size === 0) return;
    const now = performance.now();
    for (const key of keys) {
      const c = this.channels.get(key);
      if (!c) continue;
      c.ownReleaseAt = now;
      c.yieldAt = yieldTo > 0 ? now : -Infinity;
    }
  }

  /**
   * Ends the waits for exactly the key set `keys` (in any order): a lock of this process now
   * holds it, and those waiters wait for its local hand-off instead (see lock-cohort.ts).
   */
  wakeForHandoff(keys: readonly string[]): void {
    const c = this.channels.get(keys[0]!);
    if (!c || c.queue.length === 0) return;
    const want = new Set(keys);
    for (const entry of [...c.queue]) {
      if (entry.channels.length === want.size && entry.channels.every((ch) => want.has(ch.name))) entry.resolve('cohort');
    }
  }

  /** Whether our subscription to `key`'s notices is confirmed on node `node` (to tell our own subscriber from others'). */
  subscribedOn(key: string, node: number): boolean {
    return this.channels.get(key)?.acked[node] === 1;
  }

  /** Whether the last wait of the acquisition waiting on `keys` ended with its process' turn. */
  lastTurn(keys: readonly string[]): boolean {
    return this.waiters.get(keys)?.turn === true;
  }

  /** Whether `key` saw waiters lately (its channel is subscribed or lingering): it is contended. */
  contended(key: string): boolean {
    return this.channels.has(key);
  }

  /**
   * Tells which node the retries of `key` ask first. Its notice then wakes a waiter at once:
   * waiting for a quorum of notices could wake it before that node applied the release
   * (the attempt then loses there and sleeps through the rest of the release's notices).
   */
  preferNode(key: string, node: number): void {
    const c = this.channels.get(key);
    if (c) c.arbiter = node;
  }

  /** Wakes every waiter, clears timers and closes the subscriber connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.channels.values()) {
      for (const entry of [...c.queue]) entry.resolve('closed');
    }
    this.channels.close();
    await Promise.all(this.subscribers.map((s) => s.close()));
  }

  /** Tracks the longest recent attempt; decays, so one slow attempt is forgotten. */
  private learnAttempt(ms: number): void {
    const bounded = Math.min(ms, this.lingerMs);
    this.attemptMs = Math.max(bounded * 2, this.attemptMs * 0.5, 1);
  }

  /** When `c` became armed for a wait of this kind (addressed: this process' wake-up channel), Infinity while not. */
  private armedAt(c: Channel, addressed: boolean): number {
    return addressed ? this.wake!.armedAt : c.armedAt;
  }

  private finish(state: WaiterState, channels: readonly Channel[], reason: WakeReason, turn = false): WakeReason {
    const now = performance.now();
    state.lastReturnAt = now;
    state.turn = turn;
    this.stats[reason]++;
    for (const c of channels) if (c.queue.length === 0) c.idleSince = now;
    this.channels.scheduleSweep();
    return reason;
  }

  private dequeue(entry: Entry): void {
    for (const c of entry.channels) {
      const i = c.queue.indexOf(entry);
      if (i < 0) continue;
      c.queue.splice(i, 1);
      // The new head takes over the full poll rate (and so the queue's safety net).
      const head = c.queue[0];
      if (i === 0 && head) schedulePoll(head, head.pollMs, performance.now());
    }
  }

  /** Our process' turn for `key` came from node `node` (addressed wake-ups). */
  private onTurn(node: number, key: string): void {
    const c = this.channels.get(key);
    if (c) c.queued = false;
    // The oldest waiter of this process takes the turn; the others stay in line behind it.
    const head = c?.queue.find((entry) => entry.addressed);
    if (head) {
      head.resolve('notice', true);
      return;
    }
    // Nobody here waits for it any more: the next process gets it. A waiter between two attempts sees it as pending.
    this.addressed!.pass(node, key);
    if (c) {
      c.pendingAt = performance.now();
      c.pendingOwn = false;
    }
  }

  private onMessage(node: number, name: string, message: string): void {
    if (this.wake && name === this.wake.name) {
      this.onTurn(node, message);
      return;
    }
    const c = this.channels.get(name);
    if (c) deliverNotice(c, node, this.rules);
  }

  private onAck(node: number, name: string): void {
    if (this.wake && name === this.wake.name) {
      if (!this.wake.ack(node)) return;
      // As below: addressed waiters that arrived unarmed repeat their attempt once, now that their turn can reach them.
      for (const c of this.channels.values()) {
        for (const entry of [...c.queue]) if (entry.addressed) entry.resolve('armed');
      }
      return;
    }
    const c = this.channels.get(name);
    if (!c || c.acked[node] === 1) return;
    c.acked[node] = 1;
    c.ackCount++;
    if (c.armedAt === Infinity && covers(c, this.need, this.isDown)) {
      c.armedAt = performance.now();
      // Waiters that arrived unarmed (or lost their arming to a reconnect) may have missed
      // a release: each repeats its attempt once, now under the subscription.
      for (const entry of [...c.queue]) {
        if (!entry.addressed && entry.channels.every((ch) => ch.armedAt !== Infinity)) entry.resolve('armed');
      }
    }
  }

  private onLost(node: number): void {
    this.wake?.lost(node);
    for (const c of this.channels.values()) {
      if (c.acked[node] !== 1) continue;
      c.acked[node] = 0;
      c.ackCount--;
      if (c.ackCount < this.need) c.armedAt = Infinity;
    }
  }
}
