import { primitiveOf, RedlockArgumentError, type Lock, type PrimitiveLabel } from '@redlock-nest/core';
import type { LockedCallOptions } from '../options/lock-call-options.js';

/** The primitive a locked call asks for: undefined for a plain lock. */
export function wantedPrimitive(options: LockedCallOptions): PrimitiveLabel | undefined {
  return options.permits !== undefined ? 'semaphore' : options.mode;
}

/**
 * Whether a lock the call chain already holds on a resource covers a nested call that asks for
 * `wanted` on it (reentrancy). A write or plain lock covers reads, writes and plain locks (the same
 * key); a read lock covers only reads; a semaphore permit only a permit of that semaphore (its
 * keys are not the lock's).
 */
export function covers(held: Lock, wanted: PrimitiveLabel | undefined): boolean {
  const have = primitiveOf(held);
  if (have === 'semaphore' || wanted === 'semaphore') return have === wanted;
  if (have === 'read') return wanted === 'read';
  return true;
}

/**
 * A nested call that needs to write under the chain's own read lock would wait for itself
 * (its read lock keeps the writer out) until its `wait` ran out: refused at once instead.
 */
export function upgradeRefused(resources: readonly string[], where: string): RedlockArgumentError {
  return new RedlockArgumentError(
    `${where} asks for a write (or plain) lock on ${JSON.stringify(resources)} while this call chain holds a read lock on it: ` +
      'a read lock cannot be upgraded (the write would wait for our own reader). Take { mode: "write" } in the outer call.',
  );
}
