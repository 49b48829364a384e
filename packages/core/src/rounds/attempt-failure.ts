import { stoppedAtArbiter } from './arbiter-round.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { RoundResult } from './round.js';

/**
 * Why one acquire attempt failed. `transient` unavailability (nodes that may only be slow)
 * is retried like a held lock while the caller's retries / `timeoutMs` last.
 */
export type AttemptFailure =
  | { kind: 'held'; nodes: NodeOutcome[]; retryAfterMs: number | undefined }
  | { kind: 'unavailable'; nodes: NodeOutcome[]; reason?: string; transient?: boolean; retryAfterMs?: number };

/**
 * Redis replies that refuse a command for now and ask for a retry: a cluster without a master for
 * some slots during a failover (`CLUSTERDOWN`), a slot migrating (`TRYAGAIN`), a server loading its
 * data after a restart (`LOADING`), a replica whose master is gone (`MASTERDOWN`). Matched by the
 * reply's first word, never a substring. The command did not run, so retrying is safe.
 */
const TRY_AGAIN_CODES = new Set(['CLUSTERDOWN', 'TRYAGAIN', 'LOADING', 'MASTERDOWN']);

function isTryAgain(outcome: NodeOutcome): boolean {
  const code = outcome.error?.split(' ', 1)[0];
  return code !== undefined && TRY_AGAIN_CODES.has(code);
}

/**
 * When `needed` more nodes count, the nodes that answered being too few: once that many restart
 * windows have closed (ms from now), or undefined when closing them all would not be enough.
 */
function windowsEnd(windows: number[], needed: number): number | undefined {
  if (needed > windows.length) return undefined;
  windows.sort((a, b) => a - b);
  return windows[needed - 1];
}

/**
 * Contention when the nodes that failed alone do not rule out a quorum; otherwise
 * unavailable, and transient unless errors alone rule a quorum out: a timeout may be a
 * busy machine (ours or the node's), a try-again reply a failover under way, and a node in its
 * restart window counts again at a known time; a refused or closed connection is a node down.
 * When only restart windows stand between the round and a quorum, `retryAfterMs` says when
 * enough of them end (the acquisition waits that out if its deadline allows).
 */
export function classifyRound(round: RoundResult<unknown>, quorum: number): AttemptFailure {
  const n = round.outcomes.length;
  let failed = 0;
  let errors = 0;
  const heldTtls: number[] = [];
  const windows: number[] = [];
  for (const o of round.outcomes) {
    if (o.status === 'error' || o.status === 'timeout') failed++;
    if (o.countsAgainInMs !== undefined) windows.push(o.countsAgainInMs);
    else if (o.status === 'error' && !isTryAgain(o)) errors++;
    if (o.status === 'held' && o.ttlMs !== undefined) heldTtls.push(o.ttlMs);
  }
  if (failed > n - quorum) {
    const retryAfterMs = windowsEnd(windows, quorum - (n - failed));
    return {
      kind: 'unavailable',
      nodes: round.outcomes,
      transient: errors <= n - quorum,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  // The resource is free again once a majority is free: the nodes we just won, plus the
  // held ones in order of expiry. A stale key on one node does not stretch the estimate.
  heldTtls.sort((a, b) => a - b);
  const stillNeeded = quorum - round.ok;
  // A round lost at its arbiter asked no other node: the arbiter's key outlives the holder's quorum.
  const retryAfterMs =
    stillNeeded >= 1 && stillNeeded <= heldTtls.length ? heldTtls[stillNeeded - 1] : stoppedAtArbiter(round) ? heldTtls[0] : undefined;
  return { kind: 'held', nodes: round.outcomes, retryAfterMs };
}
