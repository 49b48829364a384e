/**
 * Lock cohorting (Dice, Marathe and Shavit, "Lock Cohorting", PPoPP 2012), applied across
 * machines: a plain lock released while another acquisition of the same Redlock waits for
 * exactly the same keys goes to that waiter locally. The keys stay on the nodes under the same
 * owner token, so towards every other process the lock never changed hands; inside the process
 * the hand-off is a swap of the local holder, and the previous holder's `Lock` is inert from then
 * on (its release, extend, fence and watchdog never reach the keys again: the holder check below
 * is the generation check a shared owner token needs, see LESSONS.md on one owner id per process).
 * See docs/cohorting.md.
 */
import { LockLostError, RedlockClosedError } from '../errors/errors.js';
import type { FencedView } from '../fencing/fencing.js';
import { Lock, type LockOperations } from '../lock/lock.js';
import type { ReleaseResult } from '../lock/lock-types.js';
import type { ResolvedCohort } from '../options/options.js';
import { onAbort } from '../lock/wait.js';

/**
 * A hand-off keeps the validity the keys have when it is at least this share of the waiter's
 * ttl; below it, one owner-checked extend round to the waiter's ttl runs first. Two thirds is
 * the least a lock kept by the watchdog has (it extends once a third of the ttl passed).
 */
const KEEP_VALIDITY_SHARE = 2 / 3;

/**
 * After a cohort gave way to other processes, a new acquisition of the same keys in this
 * instance waits for a release notice (or its poll) before its first attempt, for at most this
 * long or until this instance wins the lock again: otherwise a holder that released and comes
 * straight back takes the lock before the process it gave way to woke up (measured in bench/,
 * 4 processes × 4 workers: runs of two and three turns in a row).
 */
const YIELD_WINDOW_MS = 1_000;

/**
 * Turns across processes: a waiter of this instance woken by another process's release notice
 * attempts up to TURN_MAX_MS later when this instance gave way less than TURN_WINDOW_MS ago, the
 * more recently the later, so the process that had the lock longest ago tends to win the race.
 * Measured in bench/ (4 processes × 4 workers, one key, quick runs): fairness (fewest sections of
 * a worker / mean) 0.72–0.87 with 4 ms over 100 ms, 0.75–0.91 with 8 over 150, 0.81–0.95 with 16
 * over 200; without it 0.66–0.84. A run of hand-offs lasts far less than the window, so the
 * waiters of the process that gave way last wait longest.
 */
const TURN_MAX_MS = 16;
const TURN_WINDOW_MS = 200;

/** What a local wait ended with, when it did not end with the lock. */
export type LocalWaitEnd =
  /** Its wait budget passed (one retry delay, or the deadline): counts as an attempt. */
  | 'timeout'
  /** The local holder ended without handing off (lost, or a hand-off that could not be made honest): attempt on the nodes now. */
  | 'ended'
  /** The cohort gave the lock back to the nodes because other processes wait: wait for a release notice before attempting. */
  | 'yield';

/** What an acquisition waiting for a hand-off asks for. */
export interface CohortWaiterSpec {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly ttlMs: number;
  readonly fencing: boolean;
  /** Fencing counter keys of `resources`, in the same order, when `fencing`. */
  readonly fenceKeys: readonly string[] | undefined;
}

interface Waiter extends CohortWaiterSpec {
  /** Ends the wait (once; later calls do nothing) and leaves the queue. */
  settle(outcome: Lock | LocalWaitEnd | 'closed'): void;
}

/** The local holder of one key set and the acquisitions of this instance waiting for it. */
interface Cohort {
  readonly id: string;
  holder: Lock;
  /** Local hand-offs since the lock was won on the nodes (or since the last check found nobody else waiting). */
  handoffs: number;
  /** Monotonic start of that run. */
  runStart: number;
  /** Oldest first. */
  readonly queue: Waiter[];
}

/** What the cohorts need of their Redlock. @internal */
export interface CohortHost {
  readonly active: Set<Lock>;
  readonly ops: LockOperations;
  /** One owner-checked extend round of `keys` to `ttlMs`: the new monotonic end of validity, or undefined when it failed. */
  extendKeys(keys: readonly string[], value: string, ttlMs: number): Promise<number | undefined>;
  /** A fencing round for held keys (see fenceHeldLock): fresh tokens, or a rejection. */
  fence(view: FencedView, fenceKeys: readonly string[]): Promise<ReadonlyMap<string, bigint>>;
  /** How many other processes wait for `key` (are subscribed to its release notices); at least 1 when unknown. */
  othersWaiting(key: string): Promise<number>;
  /** Ends this instance's waits for release notices of exactly `keys`: they are to wait for the hand-off. */
  gather(keys: readonly string[]): void;
}

/** The release result of a hand-off: no node touched. */
const HANDED_OFF: ReleaseResult = Object.freeze({ released: 0, nodes: Object.freeze([]), handedOff: true });

/** The identity of a key set: the same keys in any order. */
export function cohortId(keys: readonly string[]): string {
  return keys.length === 1 ? keys[0]! : [...keys].sort().join('\u0000');
}

/**
 * The cohorts of one Redlock: per key set held by a plain lock of this instance, its local
 * holder and the local waiters in arrival order. @internal
 */
export class LockCohorts {
  private readonly cohorts = new Map<string, Cohort>();
  /** Locks that handed off: their later operations are refused here too (defence in depth). */
  private readonly handedOff = new WeakSet<Lock>();
  /** Key sets whose cohort gave way to other processes, and when (see YIELD_WINDOW_MS). */
  private readonly yielded = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly host: CohortHost,
    private readonly bounds: ResolvedCohort,
  ) {}

  /** Whether a lock of this instance holds the key set `id` (a waiter then waits locally, sending nothing). */
  holds(id: string): boolean {
    return !this.closed && this.cohorts.has(id);
  }

  /** Whether a new acquisition of `id` lets other processes go first (this instance just gave way to them). */
  defers(id: string): boolean {
    const at = this.yielded.get(id);
    if (at === undefined) return false;
    if (performance.now() - at < YIELD_WINDOW_MS) return true;
    this.yielded.delete(id);
    return false;
  }

  /** How long a waiter of `key` woken by another process's release waits before attempting (see TURN_MAX_MS). */
  turnDelay(key: string): number {
    const at = this.yielded.get(key);
    if (at === undefined) return 0;
    const since = performance.now() - at;
    return since >= TURN_WINDOW_MS ? 0 : TURN_MAX_MS * (1 - since / TURN_WINDOW_MS);
  }

  /** Why `lock` may not touch its keys any more (it handed them to another holder), or undefined. */
  refuse(lock: Lock): LockLostError | undefined {
    return this.handedOff.has(lock) ? new LockLostError({ resources: lock.resources, reason: 'released' }) : undefined;
  }

  /**
   * A plain lock was won on the nodes: it starts a cohort (waiters of a stale one stay queued),
   * and this instance's waiters of the same keys still waiting for a release notice come to
   * wait for its hand-off instead.
   */
  adopt(lock: Lock): void {
    if (this.closed) return;
    const id = cohortId(lock.keys);
    const queue = this.cohorts.get(id)?.queue ?? [];
    this.cohorts.set(id, { id, holder: lock, handoffs: 0, runStart: performance.now(), queue });
    this.yielded.delete(id);
    this.host.gather(lock.keys);
  }

  /**
   * Waits for the holder of `id` to hand the lock over, at most `maxMs` (Infinity: no timer).
   * Resolves to the handed-off Lock or to why the wait ended; rejects with `RedlockClosedError`
   * on close and with the signal's reason when it aborts (the waiter leaves the queue at once).
   */
  wait(id: string, spec: CohortWaiterSpec, maxMs: number, signal: AbortSignal | undefined): Promise<Lock | LocalWaitEnd> {
    const cohort = this.cohorts.get(id);
    if (this.closed) return Promise.reject(new RedlockClosedError());
    if (!cohort) return Promise.resolve('ended');
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const stopAbort = signal ? onAbort(signal, () => finish(() => reject(signal.reason))) : undefined;
      const finish = (end: () => void): void => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        stopAbort?.();
        const i = cohort.queue.indexOf(waiter);
        if (i >= 0) cohort.queue.splice(i, 1);
        end();
      };
      const waiter: Waiter = {
        ...spec,
        settle: (outcome) => finish(() => (outcome === 'closed' ? reject(new RedlockClosedError()) : resolve(outcome))),
      };
      cohort.queue.push(waiter);
      if (maxMs < Infinity) timer = setTimeout(() => waiter.settle('timeout'), Math.max(0, maxMs));
    });
  }

  /**
   * `lock` is released: hands it to the oldest local waiter of the same key set when the bounds
   * allow, else `release(yieldTo, waiting)` releases it on the nodes (`yieldTo` > 0: the cohort gives way
   * to that many other waiting processes, whose releases its waiters then let pass first; `waiting`:
   * this instance's waiters left, which attempt on the nodes after it).
   */
  async release(lock: Lock, release: (yieldTo: number, waiting: number) => Promise<ReleaseResult>): Promise<ReleaseResult> {
    if (this.handedOff.has(lock)) return HANDED_OFF;
    const cohort = this.cohorts.get(cohortId(lock.keys));
    if (!cohort || cohort.holder !== lock) return release(0, 0);
    if (cohort.queue.length === 0 || this.closed) return this.dissolve(cohort, 'ended', release, 0);
    const others = await this.othersPastBounds(cohort);
    if (others > 0) return this.dissolve(cohort, 'yield', release, others);
    let validUntil = lock.validUntilMono;
    for (;;) {
      const next = cohort.queue[0];
      // Gone meanwhile: closed, or the lock was found lost (another holder may exist by now).
      if (!next || !this.current(cohort)) return this.dissolve(cohort, 'ended', release, 0);
      // Never hand over a dead or nearly dead lock: extend it to the waiter's ttl first.
      if (validUntil - performance.now() < next.ttlMs * KEEP_VALIDITY_SHARE) {
        const extended = await this.host.extendKeys(lock.keys, lock.value, next.ttlMs);
        if (extended === undefined) return this.dissolve(cohort, 'ended', release, 0);
        validUntil = extended;
      }
      let tokens: ReadonlyMap<string, bigint> | undefined;
      if (next.fenceKeys) {
        // A fresh, higher token on the quorum; without it the waiter acquires on the nodes instead.
        try {
          tokens = await this.host.fence({ resources: next.resources, keys: next.keys, value: lock.value }, next.fenceKeys);
        } catch {
          return this.dissolve(cohort, 'ended', release, 0);
        }
      }
      // The rounds took time: the waiter may have left (aborted, timed out), the lock may have ended.
      if (cohort.queue[0] !== next || !this.current(cohort)) continue;
      if (validUntil <= performance.now()) return this.dissolve(cohort, 'ended', release, 0);
      const successor = new Lock(
        {
          resources: next.resources,
          keys: next.keys,
          value: lock.value,
          expiresAtMono: validUntil,
          ...(tokens ? { fencingTokens: tokens } : {}),
        },
        this.host.ops,
      );
      this.handedOff.add(lock);
      this.host.active.delete(lock);
      this.host.active.add(successor);
      cohort.holder = successor;
      cohort.handoffs++;
      next.settle(successor);
      return HANDED_OFF;
    }
  }

  /** `lock` became known as lost: its cohort ends, and its waiters attempt on the nodes. */
  lost(lock: Lock): void {
    const cohort = this.cohorts.get(cohortId(lock.keys));
    if (cohort?.holder !== lock) return;
    this.cohorts.delete(cohort.id);
    this.settleAll(cohort, 'ended');
  }

  /** No hand-off from now on; every local waiter rejects with `RedlockClosedError`. */
  close(): void {
    this.closed = true;
    for (const cohort of this.cohorts.values()) this.settleAll(cohort, 'closed');
    this.cohorts.clear();
    this.yielded.clear();
  }

  /**
   * 0 when the cohort may hand off once more: within its bounds, or past them while no other
   * process waits (then a new run starts); else how many other processes wait. One
   * `PUBSUB NUMSUB` per run, not per hand-off.
   */
  private async othersPastBounds(cohort: Cohort): Promise<number> {
    const now = performance.now();
    if (cohort.handoffs < this.bounds.maxHandoffs && now - cohort.runStart < this.bounds.maxHoldMs) return 0;
    const others = await this.host.othersWaiting(cohort.holder.keys[0]!);
    if (others > 0) return others;
    cohort.handoffs = 0;
    cohort.runStart = performance.now();
    return 0;
  }

  /** Ends a cohort: the lock goes back to the nodes, and the waiters learn how to go on. */
  private async dissolve(
    cohort: Cohort,
    end: LocalWaitEnd | 'closed',
    release: (yieldTo: number, waiting: number) => Promise<ReleaseResult>,
    yieldTo: number,
  ): Promise<ReleaseResult> {
    // A cohort that ended meanwhile (lost; or replaced, sharing its queue) has no waiters of its own left.
    const current = this.cohorts.get(cohort.id) === cohort;
    if (current) this.cohorts.delete(cohort.id);
    if (yieldTo > 0) this.noteYield(cohort.id);
    // Sent before the waiters attempt: on each node the release is applied before their attempt.
    const released = release(yieldTo, current ? cohort.queue.length : 0);
    if (current || this.closed) this.settleAll(cohort, this.closed ? 'closed' : end);
    return released;
  }

  /** Still this key set's cohort, and not closed (a method: the state changes across awaits). */
  private current(cohort: Cohort): boolean {
    return !this.closed && this.cohorts.get(cohort.id) === cohort;
  }

  /** Records that the cohort of `id` gave way; forgets old records, so the map stays small. */
  private noteYield(id: string): void {
    const now = performance.now();
    if (this.yielded.size >= 1_000) {
      for (const [key, at] of this.yielded) if (now - at >= YIELD_WINDOW_MS) this.yielded.delete(key);
    }
    this.yielded.set(id, now);
  }

  private settleAll(cohort: Cohort, outcome: LocalWaitEnd | 'closed'): void {
    for (const waiter of [...cohort.queue]) waiter.settle(outcome);
  }
}
