import { RedlockArgumentError } from '../errors/errors.js';
import type { AcquireOptions, ResolvedRetry } from '../options/options.js';
import type { LockContext } from '../lock/lock-context.js';
import type { PrimitiveKind } from './primitive-attempt.js';
import { readWriteKind } from './read-write-lock.js';
import { semaphoreKind } from './semaphore.js';

/**
 * The primitive an acquisition's options ask for: a read or write lock (`mode`), a semaphore
 * permit (`permits`), or undefined for a plain lock. Options were validated already.
 * @internal
 */
export function primitiveFor(
  host: LockContext,
  resources: readonly string[],
  opts: AcquireOptions,
  retry: ResolvedRetry | false,
): PrimitiveKind | undefined {
  if (opts.mode === undefined && opts.permits === undefined) return undefined;
  const what = opts.mode === undefined ? 'a semaphore' : `a ${opts.mode} lock`;
  if (resources.length !== 1) {
    throw new RedlockArgumentError(
      `${what} covers one resource, got ${resources.length}. Acquire them one after another, in a fixed order.`,
    );
  }
  const resource = resources[0]!;
  // Options were checked (option-checks.ts): permits without mode or fencing.
  if (opts.permits !== undefined) return semaphoreKind(host, resource, opts.permits);
  return readWriteKind(host, opts.mode!, resource, opts.fencing === true, retry !== false);
}
