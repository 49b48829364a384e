/**
 * Small helpers every test area shares: the lock-key format, unique resource names,
 * and ways to await a state, a rejection or an abort.
 */

import type { Redlock } from '@redlock-nest/core';

/** The library's default key prefix. */
export const DEFAULT_PREFIX = 'redlock:';

/** The Redis key of a resource's lock (the format is part of the contract: operators read it). */
export function lockKey(resource: string, prefix = DEFAULT_PREFIX): string {
  return `${prefix}lock:${resource}`;
}

let counter = 0;
/** A resource name no other test in the run uses, so tests sharing servers never interfere. */
export function uniqueResource(name: string): string {
  counter += 1;
  return `${name}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Polls `predicate` until it holds. Only for states that have no event to await (a key's
 * TTL, a watchdog's extension, a key disappearing); the bound turns a hang into a readable failure.
 */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, boundMs = 10_000): Promise<void> {
  const give = performance.now() + boundMs;
  while (!(await predicate())) {
    if (performance.now() > give) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves with the reason once `signal` aborts (immediately if it already did). */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** Settles `promise` and returns what it rejected with (fails the test if it resolved). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- callers read the error's fields; their expects check them
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** Resolves once the Redlock's own connection to node `i` answers again (after a restart). */
export async function reachable(redlock: Redlock, i: number): Promise<void> {
  const node = redlock.nodes[i]!;
  await until(
    () =>
      node
        .call((client) => client.pttl('probe'))
        .then(
          () => true,
          () => false,
        ),
    `node ${i} answers the Redlock's connection again`,
  );
}
