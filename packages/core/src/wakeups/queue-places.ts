import type { ChannelSet } from './channel-set.js';

/**
 * This process' place in each key's queue on the key's arbiter (addressed wake-ups, see
 * scripts/wake-queue.ts), kept on the key's notice channel: whether it is queued, with which
 * score, and whether waiters of its own still wait. The acquisitions (acquisition.ts) and the
 * addressed wake-ups (addressed-wakeups.ts) read and write it; the notices (release-notifier.ts)
 * end the waits.
 */
export class QueuePlaces {
  constructor(private readonly channels: ChannelSet) {}

  /**
   * Whether this process is queued for `key` on its arbiter while a waiter of its own waits: a new
   * acquisition then waits for the process' turn instead of racing the processes queued before it.
   */
  queued(key: string): boolean {
    const c = this.channels.get(key);
    return c !== undefined && c.queued && c.queue.length > 0;
  }

  /** Whether this process' entry is (as far as it knows) in `key`'s queue on the arbiter, waiters or not. */
  inQueue(key: string): boolean {
    return this.channels.get(key)?.queued === true;
  }

  /** The score this process queues with for `key`: kept while its waiters wait, so a lost race keeps its place. */
  queueScore(key: string): number {
    const c = this.channels.open(key, true);
    c.score ??= Date.now();
    return c.score;
  }

  /** A refused attempt queued this process for `key` on its arbiter. */
  noteQueued(key: string): void {
    this.channels.open(key, true).queued = true;
  }

  /** The key was free again when the refused attempt looked (its holder released meanwhile): the next wait returns at once. */
  noteFree(key: string): void {
    const c = this.channels.open(key, true);
    c.pendingAt = performance.now();
    c.pendingOwn = false;
  }

  /**
   * Whether this process should leave `key`'s queue: it is queued there and no wait of its own
   * waits for the key any more. Marks it out of the queue (the caller then removes the entry).
   */
  leaveIfIdle(key: string): boolean {
    const c = this.channels.get(key);
    if (!c?.queued || c.queue.length > 0) return false;
    c.queued = false;
    c.score = undefined;
    return true;
  }

  /** The keys this process is queued for on their arbiters. */
  queuedKeys(): string[] {
    return [...this.channels.values()].filter((c) => c.queued).map((c) => c.name);
  }

  /** This process won `key`: the next time it queues, it goes behind the processes waiting then. */
  noteWon(key: string): void {
    const c = this.channels.get(key);
    if (c) c.score = undefined;
  }

  /** How many waits of this process wait for `key` now. */
  waitingFor(key: string): number {
    return this.channels.get(key)?.queue.length ?? 0;
  }
}
