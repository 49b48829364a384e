import { checkFairOrder } from './checks/fair-order.js';
import { checkFalseOutages } from './checks/false-outage.js';
import { checkOverlaps, type ExpiredCause } from './checks/overlaps.js';
import { checkQuorum, type QuorumFindings } from './checks/quorum.js';
import { checkWrites } from './checks/writes.js';
import { checkPrimitives, type PrimitiveFindings } from './checks/primitives.js';
import type { HoldEvent } from './primitive-history.js';
import {
  isFenced,
  type CycleEvent,
  type ErrorEvent,
  type FaultEvent,
  type FaultKind,
  type FinalEvent,
  type HistoryEvent,
  type SetupEvent,
} from './history.js';

/** Quorum loss must be reported faster than this (the issue's target). */
export const QUORUM_REPORT_TARGET_MS = 1_000;
/** Examples kept per violation kind, so a broken run still prints a readable report. */
const EXAMPLES = 10;

/** Everything the checker concludes from a history. Plain JSON. */
export interface ChaosReport {
  readonly cycles: number;
  readonly cyclesPerWorker: Record<string, number>;
  readonly watchdogCycles: number;
  /** Cycles acquired with fencing (the Lua acquire script). */
  readonly fencedCycles: number;
  /** Cycles of one resource acquired without fencing (the SET NX path), and how many of them used using(). */
  readonly plainCycles: number;
  readonly plainWatchdogCycles: number;
  /** Cycles acquired with `fair: true` (queue order is checked on them). */
  readonly fairCycles: number;
  /** Pairs of fair waiters, one clearly arrived before the other, whose grant order was checked. */
  readonly fairPairsChecked: number;
  readonly firstAcquireAt: number | null;
  readonly lastReleaseAt: number | null;
  readonly faults: Partial<Record<FaultKind, number>>;
  readonly faultsTotal: number;
  readonly acquireErrors: Record<string, number>;
  readonly writes: { accepted: number; rejected: number; skipped: number; errors: number; readsRejected: number };
  /** Deliberately stale writes (after a busy-loop freeze past the TTL) and how many fencing refused. */
  readonly staleByDesign: { attempted: number; rejected: number };
  readonly overlaps: { pairs: number; plainPairs: number; expiredHolders: Record<ExpiredCause, number> };
  /** Read-write lock and semaphore holds (the overlap findings are among the violations). */
  readonly primitives: Omit<PrimitiveFindings, 'readWriteOverlaps' | 'permitOverflows'>;
  readonly quorum: Omit<QuorumFindings, 'grantedWithoutQuorum'> & { targetMs: number; targetMet: boolean | null };
  /** Count of each kind of safety violation; all must be 0. */
  readonly violations: {
    unsafeOverlaps: number;
    staleWritesAccepted: number;
    outOfOrderAccepted: number;
    lostWrites: number;
    tokenRegressions: number;
    grantedWithoutQuorum: number;
    /** `QuorumUnavailableError` while a majority of nodes was up and unpaused (per the nemesis' timeline). */
    falseOutages: number;
    /** A reader valid while a writer was, or two writers at once. */
    readWriteOverlaps: number;
    /** More valid permit holders at once than permits. */
    permitOverflows: number;
    /** A fair waiter overtaken by a later one while no fault could explain it. */
    fairOrder: number;
  };
  /** False when the history has no setup event (no node count): the false-outage check did not run. */
  readonly falseOutageChecked: boolean;
  readonly violationCount: number;
  /** One line per fault that reported details (rolling-restart steps, waiter storms, bursts). */
  readonly scenarios: string[];
  /** Up to 10 described examples of each violation kind. */
  readonly examples: string[];
  readonly passed: boolean;
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

/** Judges a chaos history. A pure function: same history, same report. */
export function checkHistory(events: readonly HistoryEvent[]): ChaosReport {
  const cycles = events.filter((e): e is CycleEvent => e.type === 'cycle');
  const errors = events.filter((e): e is ErrorEvent => e.type === 'error');
  const faults = events.filter((e): e is FaultEvent => e.type === 'fault');
  const finals = events.filter((e): e is FinalEvent => e.type === 'final');
  const setup = events.find((e): e is SetupEvent => e.type === 'setup');
  const { readWriteOverlaps, permitOverflows, ...primitives } = checkPrimitives(events.filter((e): e is HoldEvent => e.type === 'hold'));

  const overlaps = checkOverlaps(cycles, faults);
  const writes = checkWrites(cycles, finals);
  const { grantedWithoutQuorum, ...quorum } = checkQuorum(cycles, errors, faults);
  const stale = cycles.filter((c) => c.staleByDesign);
  const plain = cycles.filter((c) => !isFenced(c));
  const falseOutages = setup ? checkFalseOutages(errors, faults, setup.nodes) : [];
  const fairOrder = checkFairOrder(cycles, faults);

  const violations = {
    unsafeOverlaps: overlaps.unsafe.length,
    staleWritesAccepted: writes.staleAccepted.length,
    outOfOrderAccepted: writes.outOfOrder.length,
    lostWrites: writes.lost.length,
    tokenRegressions: overlaps.tokenRegressions.length,
    grantedWithoutQuorum: grantedWithoutQuorum.length,
    falseOutages: falseOutages.length,
    readWriteOverlaps: readWriteOverlaps.length,
    permitOverflows: permitOverflows.length,
    fairOrder: fairOrder.violations.length,
  };
  const violationCount = Object.values(violations).reduce((a, b) => a + b, 0);
  const examples = [
    overlaps.unsafe,
    writes.staleAccepted,
    writes.outOfOrder,
    writes.lost,
    overlaps.tokenRegressions,
    grantedWithoutQuorum,
    falseOutages,
    readWriteOverlaps,
    permitOverflows,
    fairOrder.violations,
  ].flatMap((list) => list.slice(0, EXAMPLES));

  return {
    cycles: cycles.length,
    cyclesPerWorker: countBy(cycles, (c) => String(c.worker)),
    watchdogCycles: cycles.filter((c) => c.watchdog).length,
    fencedCycles: cycles.length - plain.length,
    plainCycles: plain.length,
    plainWatchdogCycles: plain.filter((c) => c.watchdog).length,
    fairCycles: fairOrder.fairCycles,
    fairPairsChecked: fairOrder.pairsChecked,
    firstAcquireAt: cycles.reduce<number | null>((m, c) => (m === null || c.acquiredAt < m ? c.acquiredAt : m), null),
    lastReleaseAt: cycles.reduce<number | null>((m, c) => (m === null || c.releaseAt > m ? c.releaseAt : m), null),
    faults: countBy(faults, (f) => f.kind),
    faultsTotal: faults.length,
    acquireErrors: countBy(errors, (e) => e.error),
    writes: {
      accepted: writes.accepted,
      rejected: writes.rejected,
      skipped: writes.skipped,
      errors: writes.errors,
      readsRejected: writes.readsRejected,
    },
    staleByDesign: {
      attempted: stale.length,
      rejected: stale.filter((c) => c.write === 'rejected' || c.read === 'rejected').length,
    },
    primitives,
    overlaps: { pairs: overlaps.overlappingPairs, plainPairs: overlaps.plainPairs, expiredHolders: overlaps.expired },
    quorum: {
      ...quorum,
      targetMs: QUORUM_REPORT_TARGET_MS,
      targetMet: quorum.maxReportMs === null ? null : quorum.maxReportMs < QUORUM_REPORT_TARGET_MS,
    },
    scenarios: faults
      .filter((f) => f.detail)
      .map(
        (f) =>
          `${f.kind} [${f.targets.join(',')}] ${f.end - f.start} ms: ${Object.entries(f.detail!)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`,
      ),
    violations,
    falseOutageChecked: setup !== undefined,
    violationCount,
    examples,
    passed: violationCount === 0,
  };
}
