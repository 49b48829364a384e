/*
 * The state of one key's release notices in one process (a Channel: its subscriptions, the
 * release under way, its local waiters) and the rules every wait and notice applies to it.
 * ReleaseNotifier (release-notifier.ts) owns the channels, the subscriber connections and the
 * waits; here is what happens to one channel.
 */

/** How a wait ended (for diagnostics and tests). */
export type WakeReason = 'notice' | 'poll' | 'armed' | 'pending' | 'closed' | 'aborted' | 'cohort';

/** One pending `wait()` call. */
export interface Entry {
  readonly ticket: number;
  readonly channels: Channel[];
  /** Woken by its process' turn (addressed) rather than by its keys' broadcast notices. */
  readonly addressed: boolean;
  /** `turn`: the wake-up is this process' turn on the key's arbiter (its next attempt asks every node at once). */
  resolve: (reason: WakeReason, turn?: boolean) => void;
  /** Its fallback poll delay while at the head of a queue. */
  readonly pollMs: number;
  /** The caller's deadline (monotonic ms): its poll never fires later than this. */
  readonly notAfter: number;
  /** When its poll timer fires. */
  pollAt: number;
  timer: NodeJS.Timeout | undefined;
}

/** What survives between the waits of one acquisition (keyed by its `keys` array). */
export interface WaiterState {
  readonly ticket: number;
  /** Monotonic time its last wait returned, i.e. just before its next attempt started. */
  lastReturnAt: number;
  /** Whether its last wait ended with its process' turn (see Entry.resolve). */
  turn: boolean;
}

/** Per-resource state: one Redis channel (the lock key the release script publishes on). */
export interface Channel {
  readonly name: string;
  /** Nodes whose subscription is confirmed on their current connection. */
  readonly acked: Uint8Array;
  ackCount: number;
  /** Since when enough nodes are confirmed that no release can go unnoticed; Infinity while not. */
  armedAt: number;
  /** Waits in progress, oldest acquisition first. */
  readonly queue: Entry[];
  /** Nodes that delivered a notice of the current release (a release publishes once per node). */
  readonly seen: Uint8Array;
  seenCount: number;
  genAt: number;
  /** Whether the current release already woke someone. */
  genWoken: boolean;
  /** Time of a release notice no waiter has taken yet, or -Infinity. */
  pendingAt: number;
  /** Whether that notice is of a release this process sent. */
  pendingOwn: boolean;
  /** When this process last sent a release of this key. */
  ownReleaseAt: number;
  /** When this process last released it to give other processes their turn (see noteRelease), or -Infinity. */
  yieldAt: number;
  /** When the queue last became empty. */
  idleSince: number;
  /** The node retries of this key try first (see arbitratedRound), or -1: its notice alone wakes. */
  arbiter: number;
  /** Whether the key's own channel was subscribed (every wait asks for it; a channel made by a queue follow-up too). */
  subscribed: boolean;
  /** This process is queued for the key on its arbiter (a refused attempt queued it; no turn came since). */
  queued: boolean;
  /** The score this process queues with while its waiters have not had the lock (a lost race keeps its place). */
  score: number | undefined;
}

/**
 * A notice later than this after the first notice of a release starts a new release even
 * when its node did not repeat. Only a safety net against a release whose other notices
 * were lost (the holder's key had expired there); a wrong guess costs one poll delay.
 */
export const SAME_RELEASE_MS = 50;

/** The longest delay a Node.js timer can wait. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A waiter's fallback poll grows with its place in the queue: `pollMs × (1 + place)`.
 * The head polls at the caller's rate; the others are covered by release notices (each
 * wakes the head) and only poll as a slow safety net, so a storm of N waiters on one key
 * costs about `ln N` polls per poll delay, not N. The next waiter takes over the full
 * rate the moment it becomes the head.
 */
export function pollDelay(pollMs: number, place: number): number {
  return pollMs * (1 + place);
}

/** A channel's state before any subscription is confirmed or any notice arrived. */
export function newChannel(name: string, nodes: number, arbiter: number): Channel {
  return {
    name,
    acked: new Uint8Array(nodes),
    ackCount: 0,
    armedAt: Infinity,
    queue: [],
    seen: new Uint8Array(nodes),
    seenCount: 0,
    genAt: -Infinity,
    genWoken: false,
    pendingAt: -Infinity,
    pendingOwn: false,
    ownReleaseAt: -Infinity,
    yieldAt: -Infinity,
    idleSince: performance.now(),
    arbiter,
    subscribed: false,
    queued: false,
    score: undefined,
  };
}

/**
 * Oldest acquisition first; a waiter that lost a race keeps its old ticket, so it stays
 * in front. Returns its place (0 = head).
 */
export function enqueue(c: Channel, entry: Entry): number {
  const q = c.queue;
  let i = q.length;
  while (i > 0 && q[i - 1]!.ticket > entry.ticket) i--;
  q.splice(i, 0, entry);
  return i;
}

/** (Re)arms `entry`'s poll to fire after `ms`, never after its deadline, and only ever sooner. */
export function schedulePoll(entry: Entry, ms: number, now: number): void {
  const at = Math.min(now + ms, entry.notAfter);
  if (at >= entry.pollAt) return;
  clearTimeout(entry.timer);
  entry.pollAt = at;
  // Capped at Node's longest timer (a longer one would fire at once, with a warning).
  entry.timer = setTimeout(() => entry.resolve('poll'), Math.min(Math.max(0, at - now), MAX_TIMER_MS));
}

/**
 * Whether `c` may become armed: confirmed on `need` = n − quorum + 1 nodes (a release publishes on
 * a quorum, and every quorum intersects them), and on the key's arbiter, where a plain lock's
 * release (or a passed turn) publishes its notice alone when it woke no queued process. Armed
 * without the arbiter, a read-write waiter repeated its attempt, then missed that one notice,
 * published just before its subscription there was confirmed (1 or 2 runs in 40 of a test),
 * and slept until its poll. A later loss of one node's subscription disarms only below the
 * quorum rule, as before: a reconnect re-arms, and the poll is the safety net meanwhile.
 */
export function covers(c: Channel, need: number, isDown: ((node: number) => boolean) | undefined): boolean {
  return c.ackCount >= need && (c.arbiter < 0 || c.acked[c.arbiter] === 1 || isDown?.(c.arbiter) === true);
}

/** What the delivery of a notice reads of its notifier. */
export interface NoticeRules {
  /** Nodes a lock needs. */
  readonly quorum: number;
  /** Channels whose notice wakes every waiter of this process, not one: a read phase opened. */
  readonly wakesAll: ((channel: string) => boolean) | undefined;
  /** How long a waiter woken by another process's release waits before it attempts (0: at once). */
  turnDelay(key: string): number;
}

/**
 * A release notice of `c`'s key from node `node`: starts or joins the release it belongs to, and
 * wakes this process' oldest waiter of the key once the release is confirmed (or every waiter,
 * for a read phase), or keeps it as pending for the next wait when none waits.
 */
export function deliverNotice(c: Channel, node: number, rules: NoticeRules): void {
  const now = performance.now();
  if (c.seen[node] === 1 || now - c.genAt > SAME_RELEASE_MS) {
    // A new release: a node repeats only for a new one, since a release publishes once per node.
    c.seen.fill(0);
    c.seenCount = 0;
    c.genAt = now;
    c.genWoken = false;
  }
  c.seen[node] = 1;
  c.seenCount++;
  // Our own release that gives way to other processes: none of our waiters takes it.
  if (!c.genWoken && c.yieldAt > c.genAt - SAME_RELEASE_MS) {
    c.genWoken = true;
    c.yieldAt = -Infinity;
    return;
  }
  // Wake once the release is confirmed by as many nodes of a quorum as we can hear from:
  // the first notice alone can precede the release on the other nodes, and an attempt
  // woken that early fails and then sleeps through the rest of this release's notices.
  if (c.genWoken || (node !== c.arbiter && c.seenCount < Math.max(1, rules.quorum - (c.acked.length - c.ackCount)))) return;
  c.genWoken = true;
  if (c.queue.length > 0 && rules.wakesAll?.(c.name)) {
    // Readers all go in together: none of them would lose to another. A reader of this process
    // between two attempts (its attempt refused just before this release) sees it as pending
    // too; else it would sleep until its poll while the batch it belongs to is let in.
    for (const entry of [...c.queue]) entry.resolve('notice');
    c.pendingAt = now;
    c.pendingOwn = c.ownReleaseAt > c.genAt - SAME_RELEASE_MS;
    return;
  }
  const head = c.queue[0];
  // One local waiter per release: the others of this process would only lose to it (or
  // to the other processes' woken waiters). Measured: ~1 wake per waiting process per
  // critical section. A random back-off for losers (against split votes) changed
  // nothing measurable, so there is none.
  const delay = head ? rules.turnDelay(c.name) : 0;
  if (head && delay > 0) {
    // Its process had the lock a moment ago: let the others' waiters attempt first.
    clearTimeout(head.timer);
    head.pollAt = now + delay;
    head.timer = setTimeout(() => head.resolve('notice'), delay);
  } else if (head) head.resolve('notice');
  else {
    c.pendingAt = now;
    c.pendingOwn = c.ownReleaseAt > c.genAt - SAME_RELEASE_MS;
  }
}
