import { LockLostError, LockNotAcquiredError, type Lock, type LockEngine, type UsingOptions } from '@redlock-nest/core';
import { responseWatch, type ResponseWatch } from './http-response.js';

/**
 * Where a route's hold is in its life. Only {@link LockRouteHold} moves it:
 * `held` (the guard acquired it) → `claimed` (an interceptor took charge) → `running` (the
 * handler runs under it) → `released`. Before `running`, the response ending (a later guard
 * refused, the client left) releases it, and an expiry or takeover makes it `lost`: the handler
 * then never starts. `released` and `lost` are final.
 */
export type LockRouteHoldState = 'held' | 'claimed' | 'running' | 'released' | 'lost';

/**
 * What {@link LockRouteHold.claim} decided: `'owner'` (run the handler, then release),
 * `'inside'` (another interceptor of this request already owns it: just run inside it),
 * `'refused'` (released or lost: the handler must not run).
 */
export type RouteLockClaim = 'owner' | 'inside' | 'refused';

/** The hold of each request in flight, keyed by the request object (nothing is written on it). */
const holds = new WeakMap<object, LockRouteHold>();

/**
 * A route's lock between the guard (which acquires it) and the interceptor (which runs the
 * handler under it and releases it). Claim and release are one state machine, decided here
 * only: a hold that was released (its client left while a later guard ran) or lost (it expired
 * before the handler started) can never be claimed, so no handler ever runs on it.
 *
 * Built on the core's `using()`, so the watchdog, `maxHoldMs` and release semantics are the
 * core's: the routine simply waits until the hold ends.
 */
export class LockRouteHold {
  private current: LockRouteHoldState = 'held';
  private stopWatchingResponse: () => void = () => undefined;
  /** The response, watched once (see {@link attach}); `undefined` until then, or when it cannot be watched. */
  private watch: ResponseWatch | undefined;
  /** The owner's listener for a lock lost while held (see {@link onLost}). */
  private lostListener: ((error: unknown) => void) | undefined;

  private constructor(
    readonly lock: Lock,
    /** The Redlock that holds `lock` (the lock-context owner). */
    readonly owner: LockEngine,
    private readonly finish: () => void,
    /** Settles once the lock is released or lost; never rejects (a loss goes to {@link onLost}). */
    private readonly ended: Promise<void>,
  ) {}

  /** Acquires `resources` and keeps them locked until the hold ends. Rejects like `Redlock.acquire`. */
  static acquire(
    redlock: LockEngine,
    resources: readonly string[],
    ttlMs: number,
    options: UsingOptions | undefined,
  ): Promise<LockRouteHold> {
    return new Promise<LockRouteHold>((resolve, reject) => {
      let finish!: () => void;
      const finished = new Promise<void>((r) => {
        finish = r;
      });
      let hold: LockRouteHold | undefined;
      const settled = redlock.using(
        resources,
        ttlMs,
        (lock) => {
          hold = new LockRouteHold(lock, redlock, finish, ended);
          resolve(hold);
          return finished;
        },
        options,
      );
      // One handler for both outcomes, and the promise it makes is the hold's end: no further
      // promise per request to learn of a loss or to wait for the release quietly.
      const ended = settled.then(
        () => undefined,
        (err: unknown) => {
          // Before the routine ran this is the acquisition failure (the hint of a contended route
          // names @LockRoute's option, `wait`); after, the lock was lost.
          if (!hold) reject(err instanceof LockNotAcquiredError ? err.forWaitOption('wait') : err);
          else {
            hold.lost();
            hold.lostListener?.(err);
          }
        },
      );
    });
  }

  /**
   * Hands `hold` to `request`, where {@link of} finds it. If the response ends (or its client
   * leaves) before the handler started, for example because a later guard refused the request,
   * the hold is released and can no longer be claimed or started.
   */
  static attach(request: object, response: unknown, hold: LockRouteHold): void {
    holds.set(request, hold);
    hold.watch = responseWatch(response);
    if (hold.watch) hold.stopWatchingResponse = hold.watch.onDone(() => hold.abandon());
    else queueMicrotask(() => hold.abandon()); // a response this package cannot watch counts as done
  }

  /** The hold the guard attached to `request`, if any. */
  static of(request: object): LockRouteHold | undefined {
    return holds.get(request);
  }

  /**
   * The owner's listener for the lock being lost while held (the `using()` rejected with
   * `LockLostError`), called with that error. One listener: the owner's.
   */
  onLost(listener: (error: unknown) => void): void {
    this.lostListener = listener;
  }

  /** Calls `listener` once the client went away or the response is done; returns the stopper. */
  onResponseClose(listener: () => void): () => void {
    return this.watch?.onClose(listener) ?? (() => undefined);
  }

  /** True once something started writing the response (headers sent, or the body ended). */
  responseStarted(): boolean {
    return this.watch?.started() ?? false;
  }

  get state(): LockRouteHoldState {
    return this.current;
  }

  /**
   * An interceptor asks to run the handler under this hold. Only a `held` hold whose lock is
   * still valid is granted (`'owner'`); the owner calls {@link begin} when the handler starts and
   * then {@link release} or {@link releaseWhenResponseDone}. A released or lost hold is
   * `'refused'`: do not run the handler.
   */
  claim(): RouteLockClaim {
    if (this.current === 'claimed' || this.current === 'running') return 'inside';
    if (this.current !== 'held' || !this.valid()) return 'refused';
    this.current = 'claimed';
    return 'owner';
  }

  /**
   * The owner starts the handler. False if the hold was released or lost since the claim
   * (the response ended first, or the lock expired): do not run the handler.
   */
  begin(): boolean {
    if (this.current !== 'claimed' || !this.valid()) return false;
    this.current = 'running';
    return true;
  }

  /** Why a claim was refused, as the lock error to report (mapped to 409/423 over HTTP). */
  refusal(): LockLostError {
    const reason: unknown = this.lock.signal.reason;
    if (reason instanceof LockLostError) return reason;
    return new LockLostError({ resources: this.lock.resources, reason: this.current === 'lost' ? 'expired' : 'released' });
  }

  /** Ends the hold: stops the watchdog and releases the lock. Idempotent; never rejects. */
  release(): Promise<void> {
    if (this.current !== 'lost') this.current = 'released';
    this.stopWatchingResponse();
    this.finish();
    return this.ended;
  }

  /**
   * Releases once the response is fully written ('finish') or its client left ('close'):
   * for a streamed body, which is produced after the handler completed.
   */
  releaseWhenResponseDone(): void {
    if (this.watch) this.watch.onDone(() => void this.release());
    else queueMicrotask(() => void this.release());
  }

  /** The response ended before the handler started: release, and refuse any later claim or start. */
  private abandon(): void {
    if (this.current === 'held' || this.current === 'claimed') void this.release();
  }

  /** Still valid; an expired or taken-over hold whose handler has not started becomes `lost`. */
  private valid(): boolean {
    // remainingMs is 0 once the lock was released or lost (its signal aborts only then), so it
    // covers both without reading `lock.signal`, which would create the lock's AbortController.
    if (this.lock.remainingMs > 0) return true;
    this.lost();
    return false;
  }

  /** The lock expired or was taken over: a hold whose handler has not started can no longer be used. */
  private lost(): void {
    if (this.current !== 'held' && this.current !== 'claimed') return;
    this.current = 'lost';
    this.stopWatchingResponse();
    this.finish();
  }
}
