import type { LockLostReason } from '../errors/errors.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { PrimitiveLabel } from '../primitives/primitive-label.js';

/**
 * Typed lifecycle events of a {@link Redlock}. Payloads carry resources, counts, durations
 * and per-node outcomes; never an owner token, a password or the `Lock` object (whose
 * `value` is the token), so they can go to logs and metrics as they are.
 *
 * Durations are milliseconds from `performance.now()` (monotonic), not wall-clock.
 */
export interface RedlockEventMap {
  /** An acquisition starts (after argument validation). */
  acquire: AcquireStartEvent;
  /** An attempt found the resource held by someone else; the acquisition waits and retries. */
  wait: WaitEvent;
  /** An acquisition obtained the lock. */
  acquired: AcquiredEvent;
  /** An extension finished, successfully or not. */
  extend: ExtendEvent;
  /** A held lock became known as lost; its `signal` aborted. */
  lost: LostEvent;
  /** A lock was released. */
  release: ReleaseEvent;
  /** An acquisition gave up: contended after its retries, no quorum, aborted or closed. */
  failure: FailureEvent;
  /** An operator freed a lock with `forceRelease` (the audit trail: who, why, what). */
  forceRelease: ForceReleaseEvent;
}

/** Payload of `forceRelease`. */
export interface ForceReleaseEvent {
  /** The resource, as a one-element list like every other event's. */
  readonly resources: readonly string[];
  /** The operator's reason, as given. */
  readonly reason: string;
  /** Short hash of the owner that held it on a majority (see `inspect`), if any. */
  readonly holder: string | undefined;
  /** Nodes where a lock key was deleted. */
  readonly released: number;
  /** The fencing counter after the release (decimal): the old holder's tokens are below it. */
  readonly fencingCounter: string;
  readonly nodes: readonly NodeOutcome[];
}

/** The event names of {@link RedlockEventMap}. */
export type RedlockEventName = keyof RedlockEventMap;

/** A listener of event `E`. */
export type RedlockListener<E extends RedlockEventName> = (event: RedlockEventMap[E]) => void;

/** Payload of `acquire`. */
export interface AcquireStartEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  readonly ttlMs: number;
}

/** Payload of `wait`. */
export interface WaitEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  /** The attempt that found the resource held (1 for the first); a wait for a local hand-off counts as one. */
  readonly attempt: number;
  /** Longest time this wait lasts; a release notice can end it sooner. */
  readonly delayMs: number;
  /** Remaining TTL of the holder's key, when the nodes reported it. */
  readonly retryAfterMs: number | undefined;
  /** What each node answered on that attempt; empty when the lock is held in this instance (a wait for its hand-off, nothing sent). */
  readonly nodes: readonly NodeOutcome[];
}

/** Payload of `acquired`. */
export interface AcquiredEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  readonly ttlMs: number;
  /** Attempts it took (1 when uncontended). */
  readonly attempts: number;
  /** From the start of the acquisition to the lock, waits included. */
  readonly durationMs: number;
  /** Time spent waiting between attempts (0 when uncontended). */
  readonly waitedMs: number;
  /** Whether a fencing token was obtained. */
  readonly fencing: boolean;
  /** What each node answered on the winning attempt (`pending`: not needed for the quorum); empty after a hand-off. */
  readonly nodes: readonly NodeOutcome[];
  /**
   * Present (true) when the lock was handed over by the previous holder in this instance (lock
   * cohorting, see docs/cohorting.md): no acquire round ran; the keys never left the nodes.
   */
  readonly handoff?: true;
}

/** Payload of `extend`. */
export interface ExtendEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  readonly ttlMs: number;
  readonly ok: boolean;
  readonly durationMs: number;
  /** Class name of the error when `ok` is false (`LockLostError`, `QuorumUnavailableError`). */
  readonly error: string | undefined;
  readonly nodes: readonly NodeOutcome[];
}

/** Payload of `lost`. */
export interface LostEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  readonly reason: LockLostReason;
  /** How long the lock had been held. */
  readonly heldMs: number;
  /** The node outcomes that showed the loss, when an extension found it. */
  readonly nodes: readonly NodeOutcome[];
}

/** Payload of `release`. */
export interface ReleaseEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  /** How long the lock had been held. */
  readonly heldMs: number;
  /** How long the release round took. */
  readonly durationMs: number;
  /** Nodes on which our key was still present and was deleted (0 after a hand-off). */
  readonly released: number;
  readonly nodes: readonly NodeOutcome[];
  /** Present (true) when the lock went to a waiter of this instance instead of the nodes (docs/cohorting.md). */
  readonly handoff?: true;
}

/** Payload of `failure`. */
export interface FailureEvent {
  /** `'read'`, `'write'` or `'semaphore'` for those primitives; absent for a plain lock. */
  readonly primitive?: PrimitiveLabel;
  readonly resources: readonly string[];
  readonly attempts: number;
  readonly durationMs: number;
  /** Class name of the error the acquisition rejected with (`LockNotAcquiredError`, `QuorumUnavailableError`, `AbortError`…). */
  readonly error: string;
  /** The last attempt's node outcomes, when the error carries them. */
  readonly nodes: readonly NodeOutcome[];
}

type AnyListener = (event: never) => void;

/**
 * What an observer composed into an emitter's owner needs of it: to emit lazily to its
 * listeners. The telemetry emits through this, instead of being a base class of the `Redlock`.
 */
export interface EventSink {
  /** Whether anyone listens to `event`. */
  has(event: RedlockEventName): boolean;
  /** Emits `event` with the payload `build()` returns, building it only if someone listens. */
  notify<E extends RedlockEventName>(event: E, build: () => RedlockEventMap[E]): void;
}

/**
 * A small typed event emitter. Unlike `node:events`, a listener that throws never breaks the
 * lock operation that emitted (the error goes to `onListenerError`), and there is no special
 * `'error'` event that could crash a process. Emitting sites check `hasListeners` first,
 * so an instance nobody listens to builds no payloads.
 *
 * @example
 * ```ts
 * redlock.on('acquired', (e) => console.log(`locked ${e.resources} in ${e.durationMs.toFixed(1)} ms`));
 * redlock.on('lost', (e) => console.warn(`lost ${e.resources}: ${e.reason}`));
 * ```
 */
export class RedlockEmitter {
  private readonly listeners = new Map<RedlockEventName, AnyListener[]>();

  /**
   * Adds `listener` for `event`. Returns a function that removes it.
   * @example
   * ```ts
   * const off = redlock.on('wait', (e) => contention.inc());
   * off();
   * ```
   */
  on<E extends RedlockEventName>(event: E, listener: RedlockListener<E>): () => void {
    // Copy on write: an emit in progress keeps iterating its own snapshot.
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return () => this.off(event, listener);
  }

  /**
   * Adds `listener` for the next `event` only.
   * @example
   * ```ts
   * redlock.once('release', (e) => console.log(`held ${e.heldMs} ms`));
   * ```
   */
  once<E extends RedlockEventName>(event: E, listener: RedlockListener<E>): () => void {
    const off = this.on(event, (payload) => {
      off();
      listener(payload);
    });
    return off;
  }

  /**
   * Removes `listener` (one registration) from `event`.
   * @example
   * ```ts
   * redlock.off('acquired', onAcquired);
   * ```
   */
  off<E extends RedlockEventName>(event: E, listener: RedlockListener<E>): void {
    const list = this.listeners.get(event);
    if (!list) return;
    const i = list.indexOf(listener);
    if (i < 0) return;
    const next = list.filter((_, j) => j !== i);
    if (next.length === 0) this.listeners.delete(event);
    else this.listeners.set(event, next);
  }

  /** How many listeners `event` has. */
  listenerCount(event: RedlockEventName): number {
    return this.listeners.get(event)?.length ?? 0;
  }

  /** This emitter's listeners as an {@link EventSink}, for an observer the subclass holds. */
  protected get sink(): EventSink {
    return { has: (event) => this.hasListeners(event), notify: (event, build) => this.notify(event, build) };
  }

  /** Whether anyone listens to `event`: emitting sites check this before building a payload. */
  protected hasListeners(event: RedlockEventName): boolean {
    return this.listeners.has(event);
  }

  /** Emits `event` with the payload `build()` returns, building it only if someone listens. */
  protected notify<E extends RedlockEventName>(event: E, build: () => RedlockEventMap[E]): void {
    if (this.hasListeners(event)) this.emit(event, build());
  }

  /** Calls every listener of `event`; a throwing listener is reported, never rethrown. */
  protected emit<E extends RedlockEventName>(event: E, payload: RedlockEventMap[E]): void {
    const list = this.listeners.get(event);
    if (!list) return;
    for (const listener of list) {
      try {
        (listener as RedlockListener<E>)(payload);
      } catch (err) {
        this.onListenerError(event, err);
      }
    }
  }

  /** Where listener errors go. Default: a process warning (visible, never fatal). */
  protected onListenerError(event: RedlockEventName, err: unknown): void {
    process.emitWarning(`a '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`, 'RedlockListenerWarning');
  }
}
