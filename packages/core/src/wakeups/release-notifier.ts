import type { RedisClientLike } from '../nodes/redis-client.js';
import { NodeSubscriber } from '../nodes/node-subscriber.js';
import { onAbort } from '../lock/wait.js';
import {
  covers,
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
import type { AddressedWakeups, NotifierStats, ReleaseNotifierOptions } from './notifier-types.js';
import { QueuePlaces } from './queue-places.js';
import { SubscriptionEvents } from './subscription-events.js';
import { dequeue, finishWait } from './wait-end.js';
import { WakeChannel } from './wake-channel.js';

export type { WakeReason } from './notice-channel.js';

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
    // Made last: the events need the channels. `subscriptions` reads the subscribers only once a wait subscribes.
    const events = new SubscriptionEvents(this.channels, this.wake, this.addressed, this.need, this.isDown, this.rules);
    this.subscribers = clients.map((client, i) => new NodeSubscriber(client, i, events));
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
    if (immediate) return Promise.resolve(finishWait(this.stats, this.channels, state, channels, immediate));

    return new Promise<WakeReason>((resolve, reject) => {
      const waiterState = state;
      let settled = false;
      // One listener per signal, however many waits share it.
      const stopAbort = signal
        ? onAbort(signal, () => {
            if (settled) return;
            settled = true;
            clearTimeout(entry.timer);
            dequeue(entry);
            finishWait(this.stats, this.channels, waiterState, channels, 'aborted');
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
          dequeue(entry);
          resolve(finishWait(this.stats, this.channels, waiterState, channels, reason, turn));
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
}
