import type { ChaosReport } from './checker.js';

function ms(v: number | null): string {
  return v === null ? '-' : `${Math.round(v)} ms`;
}

/** The report as an aligned two-column table. */
export function formatReport(r: ChaosReport): string {
  const faults = Object.entries(r.faults)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const errors = Object.entries(r.acquireErrors)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const seconds = r.firstAcquireAt !== null && r.lastReleaseAt !== null ? (r.lastReleaseAt - r.firstAcquireAt) / 1000 : 0;
  const rows: Array<[string, string]> = [
    ['cycles completed', `${r.cycles} (${seconds > 0 ? Math.round(r.cycles / seconds) : 0}/s; watchdog ${r.watchdogCycles})`],
    ['cycles per worker', Object.values(r.cyclesPerWorker).join(' / ')],
    ['cycles fenced / plain', `${r.fencedCycles} / ${r.plainCycles} (plain: unfenced SET NX path; watchdog ${r.plainWatchdogCycles})`],
    ['cycles fair', `${r.fairCycles} (FIFO queue; ${r.fairPairsChecked} waiter pairs checked against queue order)`],
    ['faults injected', `${r.faultsTotal} (${faults})`],
    ['acquire errors', errors || '-'],
    ...r.scenarios.map((line): [string, string] => ['scenario', line]),
    [
      'writes accepted / rejected',
      `${r.writes.accepted} / ${r.writes.rejected} (reads rejected ${r.writes.readsRejected}, skipped ${r.writes.skipped}, errors ${r.writes.errors})`,
    ],
    ['stale writes by design', `${r.staleByDesign.attempted}, rejected by fencing ${r.staleByDesign.rejected}`],
    [
      'overlapping holder pairs',
      `${r.overlaps.pairs}, plain ${r.overlaps.plainPairs} (expired holders: frozen ${r.overlaps.expiredHolders.frozen}, lost-signalled ${r.overlaps.expiredHolders['lost-signalled']}, stalled ${r.overlaps.expiredHolders.stalled})`,
    ],
    [
      'read / write / permit holds',
      `${r.primitives.reads} / ${r.primitives.writes} / ${r.primitives.permits} (most permit holders at once ${r.primitives.maxPermitHolders})`,
    ],
    ['quorum loss windows', String(r.quorum.windows)],
    [
      'quorum loss reported',
      `first ${ms(r.quorum.firstReportMs)}, median ${ms(r.quorum.medianReportMs)}, max ${ms(r.quorum.maxReportMs)} (${r.quorum.reports} reports; target < ${r.quorum.targetMs} ms: ${r.quorum.targetMet === null ? '-' : r.quorum.targetMet ? 'met' : 'MISSED'})`,
    ],
    ['recovery after majority back', `first lock ${ms(r.quorum.recoveryMs)}, every worker ${ms(r.quorum.allWorkersRecoveredMs)}`],
    ['VIOLATION unsafe overlaps', String(r.violations.unsafeOverlaps)],
    ['VIOLATION stale writes accepted', String(r.violations.staleWritesAccepted)],
    ['VIOLATION out-of-order accepted', String(r.violations.outOfOrderAccepted)],
    ['VIOLATION lost writes', String(r.violations.lostWrites)],
    ['VIOLATION token regressions', String(r.violations.tokenRegressions)],
    ['VIOLATION granted without quorum', String(r.violations.grantedWithoutQuorum)],
    ['VIOLATION fair grants out of queue order', String(r.violations.fairOrder)],
    ['VIOLATION false outages', r.falseOutageChecked ? String(r.violations.falseOutages) : 'not checked (no node count in the history)'],
    ['VIOLATION reader/writer overlaps', String(r.violations.readWriteOverlaps)],
    ['VIOLATION permits overflowed', String(r.violations.permitOverflows)],
    ['result', r.passed ? 'PASS (0 violations)' : `FAIL (${r.violationCount} violations)`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)} | ${v}`);
  if (r.examples.length > 0) lines.push('', 'examples:', ...r.examples.map((e) => `  - ${e}`));
  return lines.join('\n');
}
