import type { CycleEvent, ErrorEvent, FaultEvent } from '../history.js';

export interface QuorumFindings {
  /** How many times a majority of lock nodes was taken down. */
  readonly windows: number;
  /** Acquisitions granted to calls made while a majority was down (must be 0). */
  readonly grantedWithoutQuorum: string[];
  /** `QuorumUnavailableError`s reported while a majority was down. */
  readonly reports: number;
  /** Fault start to the first report, worst window (ms). */
  readonly firstReportMs: number | null;
  /** The slowest report: error time minus max(call start, fault start) (ms). */
  readonly maxReportMs: number | null;
  /** Median of the same. */
  readonly medianReportMs: number | null;
  /** Majority back to the first lock granted to anyone, worst window (ms). */
  readonly recoveryMs: number | null;
  /** Majority back until every worker got a lock again, worst window (ms). */
  readonly allWorkersRecoveredMs: number | null;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function maxOrNull(values: number[]): number | null {
  return values.length === 0 ? null : Math.max(...values);
}

/** How the lock service behaved while a majority of its nodes was down, and after. */
export function checkQuorum(cycles: readonly CycleEvent[], errors: readonly ErrorEvent[], faults: readonly FaultEvent[]): QuorumFindings {
  const windows = faults.filter((f) => f.kind === 'kill-majority' || f.kind === 'pause-majority');
  const workers = new Set(cycles.map((c) => c.worker));
  const grantedWithoutQuorum: string[] = [];
  const latencies: number[] = [];
  const firsts: number[] = [];
  const recoveries: number[] = [];
  const allRecovered: number[] = [];

  for (const w of windows) {
    for (const c of cycles) {
      // A local hand-off passes on an earlier grant's lease within its validity: not a grant of its own.
      if (c.handoff === true) continue;
      if (c.callAt > w.start && c.acquiredAt < w.end) {
        grantedWithoutQuorum.push(
          `w${c.worker}#${c.cycle} got ${c.resource} at ${c.acquiredAt}, called at ${c.callAt}, while a majority was down (${w.start}..${w.end})`,
        );
      }
    }
    const reports = errors.filter((e) => e.error === 'QuorumUnavailableError' && e.at >= w.start && e.at <= w.end);
    for (const e of reports) latencies.push(e.at - Math.max(e.callAt, w.start));
    if (reports.length > 0) firsts.push(Math.min(...reports.map((e) => e.at)) - w.start);

    const firstByWorker = new Map<number, number>();
    for (const c of cycles) {
      if (c.acquiredAt < w.end) continue;
      const seen = firstByWorker.get(c.worker);
      if (seen === undefined || c.acquiredAt < seen) firstByWorker.set(c.worker, c.acquiredAt);
    }
    if (firstByWorker.size > 0) recoveries.push(Math.min(...firstByWorker.values()) - w.end);
    if (firstByWorker.size === workers.size && workers.size > 0) allRecovered.push(Math.max(...firstByWorker.values()) - w.end);
  }

  return {
    windows: windows.length,
    grantedWithoutQuorum,
    reports: latencies.length,
    firstReportMs: maxOrNull(firsts),
    maxReportMs: maxOrNull(latencies),
    medianReportMs: median(latencies),
    recoveryMs: maxOrNull(recoveries),
    allWorkersRecoveredMs: maxOrNull(allRecovered),
  };
}
