import type { LockEngine } from '@redlock-nest/core';

/** How many resources are remembered; the least recently released is forgotten first. */
const MAX_RESOURCES = 1_000;
/** Weight of the newest hold in the moving average: a few holds move it most of the way. */
const WEIGHT = 0.3;

/**
 * How long locks on a resource are typically held, as this process saw them released: an
 * exponential moving average of the `release` events' `heldMs` per resource, over the last
 * {@link MAX_RESOURCES} resources released. It lets a contended request hear "retry in 1 s"
 * when holders finish in a second, instead of the holder's whole remaining lease (the nodes
 * report the TTL, which the watchdog keeps renewing: 10 s for a 10 s lease held for 1 s).
 *
 * @example
 * ```ts
 * const holds = new RecentHolds();
 * holds.note(['export:acme'], 900);
 * holds.typicalMs(['export:acme']); // 900
 * ```
 */
export class RecentHolds {
  /** Insertion order is release order (a noted resource moves to the end): the first is the oldest. */
  private readonly averages = new Map<string, number>();

  /** Records one hold of `resources` that lasted `heldMs`. */
  note(resources: readonly string[], heldMs: number): void {
    if (!(heldMs >= 0)) return;
    for (const resource of resources) {
      const before = this.averages.get(resource);
      this.averages.delete(resource);
      this.averages.set(resource, before === undefined ? heldMs : before + WEIGHT * (heldMs - before));
      if (this.averages.size > MAX_RESOURCES) this.averages.delete(this.averages.keys().next().value!);
    }
  }

  /**
   * The typical hold of a lock on all of `resources` (the longest of theirs: each must be free),
   * or undefined when one of them was never seen released here.
   */
  typicalMs(resources: readonly string[]): number | undefined {
    let longest = 0;
    for (const resource of resources) {
      const average = this.averages.get(resource);
      if (average === undefined) return undefined;
      longest = Math.max(longest, average);
    }
    return resources.length === 0 ? undefined : longest;
  }

  /** Feeds this from `engine`'s `release` events; returns the unsubscribe function. */
  watch(engine: LockEngine): () => void {
    return engine.on('release', (event) => this.note(event.resources, event.heldMs));
  }
}

/**
 * The hold times every lock engine of this process' Nest modules reports (one process, one view:
 * a contended request's `Retry-After` is estimated from what this process saw, see
 * `retryAfterSeconds`).
 */
export const recentHolds = new RecentHolds();
