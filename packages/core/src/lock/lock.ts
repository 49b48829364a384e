import { inspect, type InspectOptions } from 'node:util';
import { LockLostError, RedlockArgumentError, type LockLostReason } from '../errors/errors.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import { checkTtl } from '../options/option-checks.js';
import type { LockInit, LockJSON, LockState, ReleaseResult } from './lock-types.js';
import { inspectLock, lockJSON, lockString } from './lock-view.js';

/**
 * The operations a Lock delegates to its engine (the Redlock, or another engine through
 * `createLock`). An interface (not an import of Redlock) keeps lock.ts and redlock.ts free of
 * a circular import.
 */
export interface LockOperations {
  extend(lock: Lock, ttlMs: number): Promise<void>;
  release(lock: Lock): Promise<ReleaseResult>;
  /** A fresh fencing token per resource for the held lock (see `Lock.fence`). */
  fence?(lock: Lock): Promise<ReadonlyMap<string, bigint>>;
  /** Told once when the lock becomes known as lost (for events and spans). */
  lost?(lock: Lock, error: LockLostError): void;
}

/**
 * A held lock. Obtained from `Redlock.acquire`, `tryAcquire` or `using`.
 * Printing it (`console.log`, a logger, `JSON.stringify`, `String()`) shows its resources,
 * expiration, fencing token and state, never its owner token.
 *
 * @example
 * ```ts
 * const lock = await redlock.acquire('report:daily', 30_000);
 * try {
 *   await doWork({ signal: lock.signal });
 *   await lock.extend(30_000); // same Lock object, new expiration
 * } finally {
 *   await lock.release();      // never throws because the lock expired
 * }
 * ```
 */
export class Lock {
  /** The locked resources (without key prefix). */
  readonly resources: readonly string[];
  /**
   * The random owner token (≥ 128 bits from a CSPRNG). Whoever knows it can extend or release the
   * lock, so it is non-enumerable and left out of `toJSON()` and `util.inspect`: printing or
   * serializing a Lock never shows it.
   */
  get value(): string {
    return this.#value;
  }
  // A private field behind a prototype getter: not an own property, so object spreads,
  // Object.keys and generic serializers skip it (and cheaper than defineProperty per lock).
  readonly #value: string;
  /**
   * The fencing token of the first resource, when acquired with `{ fencing: true }` or
   * after `fence()`. Strictly greater than every token an earlier acquisition (or
   * `fence()`) of that resource got.
   */
  get fencingToken(): bigint | undefined {
    return this.tokens?.get(this.resources[0]!);
  }
  /** The fencing token of every resource, when acquired with `{ fencing: true }` or after `fence()`. */
  get fencingTokens(): ReadonlyMap<string, bigint> | undefined {
    return this.tokens;
  }
  /** Wall-clock time (epoch ms) the lock was obtained. */
  readonly acquiredAt: number;
  /** @internal the Redis keys, prefixed */
  readonly keys: readonly string[];
  /** @internal monotonic time the lock was obtained */
  readonly acquiredAtMono: number;
  /** @internal what each node answered on the winning attempt (token-free) */
  readonly acquireNodes: readonly NodeOutcome[];

  private expiresAtMono: number;
  private tokens: ReadonlyMap<string, bigint> | undefined;
  /** Created when `signal` is first read: most locks are released without anyone listening. */
  private controller: AbortController | undefined;
  /** Why the lock was lost, once it was. */
  private lostError: LockLostError | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private releasing: Promise<ReleaseResult> | undefined;
  private stopWatchdog: (() => void) | undefined;

  /** @internal use Redlock.acquire */
  constructor(
    init: LockInit,
    private readonly ops: LockOperations,
  ) {
    this.resources = init.resources;
    this.keys = init.keys;
    this.#value = init.value;
    this.tokens = init.fencingTokens;
    this.acquireNodes = init.nodes ?? [];
    this.acquiredAtMono = performance.now();
    this.acquiredAt = Date.now();
    this.expiresAtMono = init.expiresAtMono;
    this.armExpiry();
  }

  /**
   * Aborts when the lock is known to be no longer held: its validity ran out, an
   * extension found it gone, the watchdog reached `maxHoldMs`, or its Redlock was
   * closed while it was held. `signal.reason` is a {@link LockLostError}.
   * Not aborted by a normal `release()`.
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }

  /**
   * Wall-clock time (integer epoch ms) at which the lock's validity ends, drift already subtracted.
   * Rounded down, so it never promises validity the lock does not have.
   */
  get expiration(): number {
    return Math.floor(Date.now() + (this.expiresAtMono - performance.now()));
  }

  /** `held` until released; `lost` once the lock became known as lost while held; `released` after `release()`. */
  get state(): LockState {
    if (this.lostError && this.lostError.reason !== 'released') return 'lost';
    return this.releasing || this.lostError ? 'released' : 'held';
  }

  /** Milliseconds of validity left (0 when expired or released). */
  get remainingMs(): number {
    if (this.releasing || this.lostError) return 0;
    return Math.max(0, this.expiresAtMono - performance.now());
  }

  /**
   * @internal The error `signal` aborted with once the lock was lost, read without making the
   * signal: `using()` checks it after every routine, and an AbortController costs about 8 µs.
   */
  get lossError(): LockLostError | undefined {
    return this.lostError;
  }

  /** True once `release()` was called (or the Redlock closed). */
  get released(): boolean {
    return this.releasing !== undefined;
  }

  /**
   * Extends the lock to `ttlMs` from now on a quorum of nodes, owner-checked.
   * Updates this same object and resolves to it.
   *
   * @throws {LockLostError} the lock is gone (expired, taken over, or released); `signal` aborts.
   * @throws {QuorumUnavailableError} too few nodes answered; the lock stays valid until `expiration`.
   * @example
   * ```ts
   * await lock.extend(10_000);
   * ```
   */
  async extend(ttlMs: number): Promise<this> {
    checkTtl(ttlMs);
    if (this.releasing) throw new LockLostError({ resources: this.resources, reason: 'released' });
    if (this.lostError) throw this.lostError;
    if (performance.now() >= this.expiresAtMono) {
      const lost = this.lose('expired');
      throw lost;
    }
    await this.ops.extend(this, ttlMs);
    return this;
  }

  /**
   * Obtains a fresh fencing token for this lock while it is held, also for a lock acquired
   * without `{ fencing: true }`: a fencing round on the quorum, owner-checked (only nodes
   * where this lock's keys still hold its owner token increment their counter), with the
   * same guarantee as an acquisition: the new token is strictly greater than every token
   * handed out for the resource before. Updates `fencingToken` / `fencingTokens` on this
   * same object (for every resource of the lock) and resolves to it.
   *
   * @throws {LockLostError} the lock is gone (expired, taken over, or released).
   * @throws {QuorumUnavailableError} too few nodes answered; the lock stays valid, its token unchanged.
   * @example
   * ```ts
   * const lock = await redlock.acquire('order:42', 10_000); // no fencing yet
   * await lock.fence();
   * await orders.markPaid(42, { fencingToken: lock.fencingToken! });
   * ```
   */
  async fence(): Promise<this> {
    this.assertHeld();
    if (!this.ops.fence) {
      throw new RedlockArgumentError('This lock was made by an engine that cannot fence a held lock; acquire it with { fencing: true }.');
    }
    const tokens = await this.ops.fence(this);
    // The round took time: a token for a lock that ended meanwhile is not handed out.
    this.assertHeld();
    // Two concurrent fence() calls may resolve out of order: keep the greater token.
    const merged = new Map(this.tokens ?? []);
    for (const [r, t] of tokens) if (!(merged.get(r)! >= t)) merged.set(r, t);
    this.tokens = merged;
    return this;
  }

  /**
   * Releases the lock on every node (owner-checked, so it never frees someone else's
   * lock). Idempotent; never throws, also not when the lock already expired or a node is down.
   */
  release(): Promise<ReleaseResult> {
    if (!this.releasing) {
      this.clearTimers();
      this.releasing = this.ops.release(this);
    }
    return this.releasing;
  }

  /** `await using lock = await redlock.acquire(...)` releases at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Throws the reason this lock is no longer held, if it is not. */
  private assertHeld(): void {
    if (this.releasing) throw new LockLostError({ resources: this.resources, reason: 'released' });
    if (this.lostError) throw this.lostError;
    if (performance.now() >= this.expiresAtMono) throw this.lose('expired');
  }

  /** @internal monotonic end of validity, also once released (a hand-off passes it on) */
  get validUntilMono(): number {
    return this.expiresAtMono;
  }

  /** For engines: new validity after a successful extension (monotonic ms, `performance.now()` clock). */
  setExpiry(expiresAtMono: number): void {
    if (this.releasing || this.lostError) return;
    this.expiresAtMono = expiresAtMono;
    this.armExpiry();
  }

  /** For engines: marks the lock as lost, aborts `signal` and stops timers. Returns the reason. */
  lose(reason: LockLostReason, nodes?: readonly NodeOutcome[]): LockLostError {
    if (this.lostError) return this.lostError;
    const error = new LockLostError({ resources: this.resources, reason, ...(nodes ? { nodes } : {}) });
    this.lostError = error;
    this.clearTimers();
    this.controller?.abort(error);
    this.ops.lost?.(this, error);
    return error;
  }

  /** @internal the watchdog registers how to stop it */
  attachWatchdog(stop: () => void): void {
    this.stopWatchdog = stop;
  }

  /**
   * The lock as JSON: resources, expiration, fencing token (a string) and state; never the owner
   * token. So `JSON.stringify(lock)` works, and a route may return `currentLock()`.
   * @example
   * ```ts
   * JSON.stringify(lock); // {"resources":["order:42"],"expiration":1767225600000,"fencingToken":"17","state":"held"}
   * ```
   */
  toJSON(): LockJSON {
    return lockJSON(this);
  }

  /** One line for string contexts: `Lock ["order:42"] held until 2026-01-01T00:00:00.000Z, fencing token 17`. */
  toString(): string {
    return lockString(this);
  }

  /** What `console.log(lock)` and `util.inspect(lock)` print: {@link toJSON}'s fields, no token, timers or internals. */
  [inspect.custom](depth: number, options: InspectOptions, nested: typeof inspect = inspect): string {
    return inspectLock(this, depth, options, nested);
  }

  private armExpiry(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const delay = Math.max(0, this.expiresAtMono - performance.now());
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = undefined;
      this.lose('expired');
    }, delay);
    this.expiryTimer.unref();
  }

  private clearTimers(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    const stop = this.stopWatchdog;
    this.stopWatchdog = undefined;
    stop?.();
  }
}
