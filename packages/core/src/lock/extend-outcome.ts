import { QuorumUnavailableError } from '../errors/errors.js';
import type { Lock } from './lock.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { RoundResult } from '../rounds/round.js';

/**
 * Applies an extend round to `lock`: the new expiry when a quorum extended it in time; else
 * `LockLostError` when a majority no longer holds the key ('not-owner') or its validity ran out
 * ('expired'); else `QuorumUnavailableError`, the lock still valid until its current expiration.
 */
export function settleExtend(lock: Lock, round: RoundResult<unknown>, expiresAtMono: number, quorum: number): readonly NodeOutcome[] {
  if (round.ok >= quorum && expiresAtMono > performance.now()) {
    lock.setExpiry(expiresAtMono);
    return round.outcomes;
  }
  const gone = round.outcomes.filter((o) => o.status === 'absent').length;
  if (gone > round.outcomes.length - quorum) throw lock.lose('not-owner', round.outcomes);
  // Any node, even one that timed out, may have applied the new ttl: when that ends sooner
  // than the current validity (a shorter ttl, or a round slower than it), only it is certain.
  if (expiresAtMono < performance.now() + lock.remainingMs) lock.setExpiry(expiresAtMono);
  if (lock.remainingMs <= 0) throw lock.lose('expired', round.outcomes);
  throw new QuorumUnavailableError({
    resources: lock.resources,
    attempts: 1,
    nodes: round.outcomes,
    quorum,
    reason: `extend reached only ${round.ok} node(s); the lock stays valid until its current expiration`,
  });
}
