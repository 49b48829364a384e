import { DOWN_LEAD_MS, RECONNECT_GRACE_MS } from './false-outage.js';
import type { CycleEvent, FaultEvent } from '../history.js';

/**
 * How much earlier a fair waiter must have called than another to count as having arrived
 * first: its first round (which queues it) must have landed before the other's began. Two
 * calls closer than this overlap, and the queue orders them by ticket, either way.
 */
export const ARRIVAL_SLACK_MS = 500;

/**
 * The fair lock's invariant: grants in queue order, except where a waiter died. A pair is a
 * violation when waiter X called (and so queued) clearly before Y, Y was granted and released
 * the lock before X got it, while X was waiting the whole time (both queued, X never timed out,
 * it is in the history as a cycle), and no fault of any kind (node down, paused or restarted,
 * a worker frozen, an overload scenario) overlapped X's wait: under a fault, a waiter may be
 * dropped as dead or its queue entries lost, and it then rejoins.
 */
export function checkFairOrder(
  cycles: readonly CycleEvent[],
  faults: readonly FaultEvent[],
): { fairCycles: number; pairsChecked: number; violations: string[] } {
  const fair = cycles.filter((c) => c.fairTicket !== undefined && c.fairTicket > 0);
  const quiet = (from: number, to: number): boolean =>
    !faults.some((f) => f.start - DOWN_LEAD_MS <= to && f.end + RECONNECT_GRACE_MS >= from);
  const violations: string[] = [];
  let pairsChecked = 0;
  const byResource = new Map<string, CycleEvent[]>();
  for (const c of fair) byResource.set(c.resource, [...(byResource.get(c.resource) ?? []), c]);
  for (const list of byResource.values()) {
    const sorted = [...list].sort((a, b) => a.callAt - b.callAt);
    for (const [i, x] of sorted.entries()) {
      if (!quiet(x.callAt, x.acquiredAt)) continue;
      for (const y of sorted.slice(i + 1)) {
        if (y.callAt >= x.acquiredAt) break;
        if (y.callAt - x.callAt < ARRIVAL_SLACK_MS) continue;
        pairsChecked++;
        if (y.releaseAt <= x.acquiredAt) {
          violations.push(
            `fair ${x.resource}: worker ${y.worker} cycle ${y.cycle} (called ${y.callAt - x.callAt} ms later) was granted before worker ${x.worker} cycle ${x.cycle}`,
          );
        }
      }
    }
  }
  return { fairCycles: cycles.filter((c) => c.fairTicket !== undefined).length, pairsChecked, violations };
}
