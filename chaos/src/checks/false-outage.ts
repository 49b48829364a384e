import { NODE_FAULTS, WORKER_FREEZES, type ErrorEvent, type FaultEvent } from '../history.js';

/**
 * A node counts as down from a little before its fault's recorded start (a kill is
 * recorded once the process is gone) ...
 */
export const DOWN_LEAD_MS = 250;
/**
 * ... until a while after its recorded end: a restarted node accepts connections at once,
 * but each client reconnects on its own backoff (the library's clients: at most 1 s apart, plus the connect itself on a loaded machine).
 */
export const RECONNECT_GRACE_MS = 1_500;

/**
 * `QuorumUnavailableError`s that the nemesis' own timeline cannot explain: during the whole
 * call, a majority of the lock nodes was up and unpaused, and the calling worker was not
 * frozen. The library then reported an outage that was not one (overload, a client-side
 * queue charged to the nodes): a violation.
 *
 * Conservative: every node fault overlapping the call counts as a node down for all of it,
 * whether or not the faults overlapped each other.
 */
export function checkFalseOutages(errors: readonly ErrorEvent[], faults: readonly FaultEvent[], nodes: number): string[] {
  const quorum = Math.floor(nodes / 2) + 1;
  const nodeFaults = faults.filter((f) => NODE_FAULTS.has(f.kind));
  const freezes = faults.filter((f) => WORKER_FREEZES.has(f.kind));
  const found: string[] = [];
  for (const e of errors) {
    if (e.error !== 'QuorumUnavailableError') continue;
    const frozen = freezes.some((f) => f.targets.includes(e.worker) && f.start <= e.at && f.end >= e.callAt);
    if (frozen) continue;
    const down = new Set<number>();
    for (const f of nodeFaults) {
      if (f.start - DOWN_LEAD_MS <= e.at && f.end + RECONNECT_GRACE_MS >= e.callAt) for (const t of f.targets) down.add(t);
    }
    if (nodes - down.size >= quorum) {
      found.push(
        `w${e.worker} got QuorumUnavailableError on ${e.resource} (called at ${e.callAt}, failed at ${e.at}) ` +
          `while ${nodes - down.size} of ${nodes} lock nodes were up and unpaused (quorum ${quorum}): a false outage`,
      );
    }
  }
  return found;
}
