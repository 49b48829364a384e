/*
 * The shapes a ReleaseNotifier (release-notifier.ts) is configured with and reports: its options,
 * the addressed wake-ups it is given and its wait counters. Apart from the class so that its
 * helpers (subscription-events.ts) can name them without importing the notifier back.
 */

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
