import type { InMemoryLockTable } from './in-memory-lock-table.js';

/**
 * A lock "someone else" (another instance of the app) holds in the testing table, made by
 * `RedlockTestingService.holdElsewhere`. While it exists, your code's acquisitions of the same
 * resource are contended: `onLocked: 'skip'` skips, `'throw'` rejects with `LockNotAcquiredError`,
 * `wait` waits until {@link release}.
 */
export class ForeignHold {
  /** @internal */
  constructor(
    private readonly table: InMemoryLockTable,
    /** The held resources. */
    readonly resources: readonly string[],
    private readonly owner: string,
  ) {}

  /** Whether the hold is still in the table (not released, not expired). */
  get held(): boolean {
    return this.resources.every((r) => this.table.owner(r) === this.owner);
  }

  /** Lets go, waking your code's waiting acquisitions. Idempotent. */
  release(): void {
    this.table.release(this.resources, this.owner);
  }
}
