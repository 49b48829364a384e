import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '@redlock-nest/core';

/**
 * One held lock in the current call chain. Frames form a linked list from the innermost
 * outwards, so a nested lock context never mutates the outer one (concurrent branches of
 * the same chain each see their own view).
 */
export interface LockFrame {
  readonly lock: Lock;
  /** Identity of the Redlock that holds `lock`: reentrancy only counts locks of the same instance. */
  readonly owner: object;
  readonly parent: LockFrame | undefined;
}

const storage = new AsyncLocalStorage<LockFrame>();

/** A lock still counts as held by the chain while it is neither released nor lost (read without making its signal). */
function isHeld(lock: Lock): boolean {
  return lock.state === 'held';
}

/**
 * The lock held by the current call chain: the innermost one, or the one covering `resource`.
 * Works inside `@WithLock` methods, `@LockRoute` handlers and `RedlockService.using` routines,
 * including everything they await; `undefined` outside of them.
 *
 * @example
 * ```ts
 * @WithLock('order:<id>', { fencing: true })
 * async pay(id: string) {
 *   const lock = currentLock()!;
 *   await this.payments.write(id, { fencingToken: lock.fencingToken, signal: lock.signal });
 * }
 * ```
 */
export function currentLock(resource?: string): Lock | undefined {
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    if (resource === undefined || frame.lock.resources.includes(resource)) return frame.lock;
  }
  return undefined;
}

/** Whether the current call chain holds any lock at all (a locked call outside of one skips the reentrancy checks). */
export function inLockContext(): boolean {
  return storage.getStore() !== undefined;
}

/**
 * The resources among `resources` that the current chain already holds through `owner` (by a lock
 * that `covers` the call, when given: a read lock does not cover a write).
 */
export function heldResources(owner: object, resources: readonly string[], covers?: (lock: Lock) => boolean): Set<string> {
  const held = new Set<string>();
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    if (frame.owner !== owner || !isHeld(frame.lock) || (covers && !covers(frame.lock))) continue;
    for (const r of frame.lock.resources) if (resources.includes(r)) held.add(r);
  }
  return held;
}

/** The resources among `resources` that the chain holds through `owner` by a lock without a fencing token for them. */
export function heldWithoutFencing(owner: object, resources: readonly string[]): string[] {
  const unfenced: string[] = [];
  for (const r of resources) {
    for (let frame = storage.getStore(); frame; frame = frame.parent) {
      if (frame.owner !== owner || !isHeld(frame.lock) || !frame.lock.resources.includes(r)) continue;
      if (frame.lock.fencingTokens?.has(r) !== true) unfenced.push(r);
      break;
    }
  }
  return unfenced;
}

/** Runs `fn` with `lock` pushed onto the chain's lock context. */
export function runInLockContext<T>(lock: Lock, owner: object, fn: () => T): T {
  return storage.run({ lock, owner, parent: storage.getStore() }, fn);
}

/** Runs `routine(lock)` with `lock` pushed onto the chain's lock context (no closure per call, as `using()` routines are called). */
export function runWithLockContext<T>(lock: Lock, owner: object, routine: (lock: Lock) => T): T {
  return storage.run({ lock, owner, parent: storage.getStore() }, routine, lock);
}

/**
 * Gives the locks through which the chain holds any of `resources` without a fencing token
 * for it a fresh token (`Lock.fence()`), so a fenced call nested in an unfenced one (a
 * `@WithLock(..., { fencing: true })` method called from an `@LockRoute` handler) reuses the
 * held lock with a valid token instead of failing.
 */
export async function fenceHeldWithoutFencing(owner: object, resources: readonly string[]): Promise<void> {
  const locks = new Set<Lock>();
  for (const r of heldWithoutFencing(owner, resources)) {
    for (let frame = storage.getStore(); frame; frame = frame.parent) {
      if (frame.owner === owner && isHeld(frame.lock) && frame.lock.resources.includes(r)) {
        locks.add(frame.lock);
        break;
      }
    }
  }
  await Promise.all([...locks].map((lock) => lock.fence()));
}

/**
 * Captures the chain's lock context now, for code that resumes later from elsewhere (an
 * Observable's source, an async generator's body): the returned function runs `fn` in it.
 */
export function captureLockContext(): <T>(fn: () => T) => T {
  const frame = storage.getStore();
  return (fn) => (frame ? storage.run(frame, fn) : storage.exit(fn));
}
