import { LockLostError, type Lock } from '@redlock-nest/core';
import type { LockedCallOptions } from '../options/lock-call-options.js';
import { captureLockContext, currentLock } from './lock-context.js';
import type { LockServiceBase } from './lock-service.base.js';

/**
 * A lock held across a lazy result instead of one call: an Observable's subscription or an async
 * iteration. Opened through `LockServiceBase.runLocked`, so acquisition, reentrancy, `onLocked`,
 * fencing and the watchdog are exactly those of a locked call; the "call" simply lasts until
 * {@link close}. Code that resumes later from the consumer's side (the next `next()` of an
 * iterator, a subscription) runs through {@link run}, which re-enters the lock context and never
 * resumes it on a lock that was lost or released.
 */
export class LockScope {
  /** The locks covering the scope's resources (its own, or the outer ones it reuses). */
  private readonly locks: readonly Lock[];

  private constructor(
    private readonly resources: readonly string[],
    private readonly enter: <T>(fn: () => T) => T,
    private readonly finish: () => void,
    private readonly settled: () => Promise<unknown>,
  ) {
    this.locks = [...new Set(resources.map((r) => currentLock(r)).filter((l): l is Lock => l !== undefined))];
  }

  /**
   * Acquires (or reuses) the lock on `resources` and resolves once it is held; resolves
   * `undefined` when `onLocked: 'skip'` skipped it. Rejects like a locked call's acquisition.
   */
  static open(
    service: LockServiceBase,
    resources: readonly string[],
    options: LockedCallOptions,
    where: string,
    signal?: AbortSignal,
  ): Promise<LockScope | undefined> {
    return new Promise<LockScope | undefined>((resolve, reject) => {
      let finish!: () => void;
      const finished = new Promise<void>((r) => {
        finish = r;
      });
      let scope: LockScope | undefined;
      // runLocked may call the body synchronously (reentrant case), before `settled` is assigned.
      // eslint-disable-next-line prefer-const -- assigned after `body` is defined, which reads it
      let settled: Promise<unknown> | undefined;
      const body = (): Promise<void> => {
        scope = new LockScope(resources, captureLockContext(), finish, () => settled!);
        resolve(scope);
        return finished;
      };
      settled = service.runLocked(resources, options, body, where, signal);
      // Before the body ran this is the acquisition's outcome; after, close() reports it.
      settled.then(
        () => {
          if (!scope) resolve(undefined);
        },
        (err: unknown) => {
          if (!scope) reject(err);
        },
      );
    });
  }

  /** Runs `fn` in the scope's lock context; throws instead when the lock is lost or released. */
  run<T>(fn: () => T): T {
    this.assertHeld();
    return this.enter(fn);
  }

  /** Runs cleanup code (an iterator's `return()`) in the lock context, held or not. */
  runCleanup<T>(fn: () => T): T {
    return this.enter(fn);
  }

  /** Calls `listener` with the reason once a lock of the scope is lost; returns the unsubscriber. */
  onLost(listener: (reason: unknown) => void): () => void {
    const lost = this.locks.find((l) => l.signal.aborted);
    if (lost) {
      listener(lost.signal.reason);
      return () => {};
    }
    const handlers = this.locks.map((lock) => {
      const handler = (): void => listener(lock.signal.reason);
      lock.signal.addEventListener('abort', handler, { once: true });
      return () => lock.signal.removeEventListener('abort', handler);
    });
    return () => {
      for (const remove of handlers) remove();
    };
  }

  /** Ends the scope: releases the lock (unless an outer call owns it). Rejects with `LockLostError` if it was lost. */
  async close(): Promise<void> {
    this.finish();
    await this.settled();
  }

  private assertHeld(): void {
    for (const lock of this.locks) {
      if (lock.signal.aborted) throw lock.signal.reason;
      // An outer lock this scope reuses was released by its owner before the consumer finished.
      if (lock.released) throw new LockLostError({ resources: this.resources, reason: 'released' });
    }
  }
}
