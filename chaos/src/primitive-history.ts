/**
 * What the chaos workers record of read-write locks and semaphore permits: one event per hold,
 * with the interval in which the holder believed it held and the validity the library promised.
 */

/** One hold of a read lock, a write lock or a semaphore permit. */
export interface HoldEvent {
  readonly type: 'hold';
  readonly worker: number;
  /** Unique per worker (a counter of its own, apart from the lock cycles'). */
  readonly cycle: number;
  readonly resource: string;
  readonly primitive: 'read' | 'write' | 'semaphore';
  /** For a semaphore: the permits every worker asks with. */
  readonly permits?: number;
  /** When the acquire call resolved. */
  readonly acquiredAt: number;
  /** The validity end the library computed (after the last extension), wall-clock ms. */
  readonly validUntil: number;
  /** When the holder called release(). */
  readonly releaseAt: number;
  /** Whether `lock.signal` had aborted by `releaseAt`. */
  readonly lostSignal: boolean;
}
