import type { InMemoryRedlock } from './in-memory-redlock.js';

/**
 * A lock "someone else" (another instance of the app) holds on the testing module's in-memory
 * nodes, made by `RedlockTestingService.holdElsewhere`. While it exists, your code's acquisitions
 * of the same resource are contended: `onLocked: 'skip'` skips, `'throw'` rejects with
 * `LockNotAcquiredError`, `wait` waits until {@link release}.
 */
export class ForeignHold {
  /** @internal */
  constructor(
    private readonly redlock: InMemoryRedlock,
    /** The held resources. */
    readonly resources: readonly string[],
    private readonly owner: string,
  ) {}

  /** Whether the hold is still on a majority of the nodes (not released, not expired). */
  get held(): boolean {
    return this.redlock.heldAs(this.resources, this.owner);
  }

  /** Lets go, waking your code's waiting acquisitions (a release notice, as a real release sends). Idempotent. */
  release(): void {
    this.redlock.releaseAs(this.resources, this.owner);
  }
}
