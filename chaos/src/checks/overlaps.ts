import { fencedCycles, isFenced, type CycleEvent, type FaultEvent } from '../history.js';
import { groupBy, PrefixMax } from './prefix-max.js';

/** Why an older holder was still in its critical section when a newer one got the lock. */
export type ExpiredCause = 'frozen' | 'lost-signalled' | 'stalled';

export interface OverlapFindings {
  /** Pairs whose validity intervals overlap: two valid holders at once (Redlock safety broken). */
  readonly unsafe: string[];
  /** Holders that believed they held the lock after their validity ended while a newer holder had it, by cause. */
  readonly expired: Record<ExpiredCause, number>;
  /** Pairs of holders whose belief intervals overlapped (each explained by an expired older holder, or unsafe). */
  readonly overlappingPairs: number;
  /** Of those, the pairs of two unfenced holders. */
  readonly plainPairs: number;
  /** Fenced acquisitions whose fencing token was not above one granted before the call began. */
  readonly tokenRegressions: string[];
}

/** End of the interval in which a holder's lock was valid (never after its release call). */
export function validEnd(c: CycleEvent): number {
  return Math.min(c.releaseAt, c.validUntil);
}

function label(c: CycleEvent): string {
  const lock = isFenced(c) ? `token ${c.token}` : 'unfenced';
  return `w${c.worker}#${c.cycle}(${lock}, ${c.acquiredAt}..${c.releaseAt}, valid to ${Math.round(c.validUntil)})`;
}

/**
 * Which of two holders got the lock first: by token when both are fenced (the lock
 * service's own order), otherwise by acquire time, the only order an unfenced lock has.
 */
function order(x: CycleEvent, y: CycleEvent): [CycleEvent, CycleEvent] {
  if (isFenced(x) && isFenced(y)) return BigInt(x.token!) <= BigInt(y.token!) ? [x, y] : [y, x];
  return x.acquiredAt <= y.acquiredAt ? [x, y] : [y, x];
}

function wasFrozen(c: CycleEvent, freezes: readonly FaultEvent[]): boolean {
  return freezes.some((f) => f.targets.includes(c.worker) && f.start < c.releaseAt && f.end > c.callAt);
}

/**
 * Compares holders of the same resource. Belief intervals ([acquiredAt, releaseAt])
 * may overlap only when the older holder's validity had already ended (it was frozen
 * or stalled past its TTL); validity intervals must never overlap, fenced or not.
 */
export function checkOverlaps(cycles: readonly CycleEvent[], faults: readonly FaultEvent[]): OverlapFindings {
  const freezes = faults.filter((f) => f.kind === 'sigstop-worker' || f.kind === 'busy-worker');
  const unsafe: string[] = [];
  const tokenRegressions: string[] = [];
  const expiredHolders = new Map<string, ExpiredCause>();
  let overlappingPairs = 0;
  let plainPairs = 0;

  for (const list of groupBy(cycles, (c) => c.resource).values()) {
    // First, so a fenced cycle without a token fails the check before order() reads it.
    const fenced = fencedCycles(list);
    const sorted = [...list].sort((a, b) => a.acquiredAt - b.acquiredAt);
    // Sweep: `open` holds earlier holders whose belief interval has not ended yet.
    let open: CycleEvent[] = [];
    for (const y of sorted) {
      open = open.filter((x) => x.releaseAt > y.acquiredAt);
      for (const x of open) {
        overlappingPairs++;
        if (!isFenced(x) && !isFenced(y)) plainPairs++;
        const [older, newer] = order(x, y);
        const disjoint = validEnd(x) <= y.acquiredAt || validEnd(y) <= x.acquiredAt;
        if (!disjoint) {
          unsafe.push(`${label(older)} and ${label(newer)} were both valid holders of ${y.resource}`);
          continue;
        }
        const cause: ExpiredCause = wasFrozen(older, freezes) ? 'frozen' : older.lostSignal ? 'lost-signalled' : 'stalled';
        expiredHolders.set(`${older.worker}#${older.cycle}`, cause);
      }
      open.push(y);
    }

    // A token granted before this call began must be strictly lower than this call's token
    // (unfenced cycles have no token: they take no part in this).
    const granted = new PrefixMax(fenced.map((c) => ({ time: c.acquiredAt, value: BigInt(c.token) })));
    for (const c of fenced) {
      const before = granted.before(c.callAt);
      if (before >= BigInt(c.token)) {
        tokenRegressions.push(`${label(c)} got a token not above ${before}, granted before its call began`);
      }
    }
  }
  const expired: Record<ExpiredCause, number> = { frozen: 0, 'lost-signalled': 0, stalled: 0 };
  for (const cause of expiredHolders.values()) expired[cause]++;
  return { unsafe, expired, overlappingPairs, plainPairs, tokenRegressions };
}
