/**
 * The chaos checker judges hand-made histories: a clean one passes, and each kind of
 * violation is caught. This is what proves a "0 violations" chaos report means something.
 */
import { describe, expect, it } from '@jest/globals';
import { checkHistory } from '../../chaos/src/checker.js';
import type { CycleEvent, ErrorEvent, FaultEvent, FinalEvent, HistoryEvent } from '../../chaos/src/history.js';

let cycleNo = 0;
/** A clean cycle of `worker` on resource `r` holding [at, at+10), reading seq-1 and writing seq. */
function cycle(worker: number, token: number, at: number, seq: number, over: Partial<CycleEvent> = {}): CycleEvent {
  cycleNo++;
  return {
    type: 'cycle',
    worker,
    cycle: cycleNo,
    resource: 'r',
    token: String(token),
    callAt: at - 2,
    acquiredAt: at,
    validUntil: at + 1000,
    releaseAt: at + 10,
    lostSignal: false,
    read: 'accepted',
    readSeq: seq - 1,
    write: 'accepted',
    writeSeq: seq,
    writeStartAt: at + 4,
    writeEndAt: at + 6,
    watchdog: false,
    staleByDesign: false,
    ...over,
  };
}

function final(c: CycleEvent): FinalEvent {
  return { type: 'final', resource: c.resource, seq: c.writeSeq ?? 0, worker: c.worker, cycle: c.cycle };
}

function cleanHistory(): HistoryEvent[] {
  const a = cycle(1, 1, 100, 1);
  const b = cycle(2, 2, 120, 2);
  const c = cycle(1, 3, 140, 3);
  return [a, b, c, final(c)];
}

/**
 * Worker 1 holds token 1 and is frozen (SIGSTOP) from 105 to 2105, past its validity
 * (100..1100). Worker 2 gets the lock at 1200 with token 2 and writes sequence 1.
 * Worker 1 wakes and tries to write with token 1.
 */
function frozenHolder(staleWrite: CycleEvent['write']): HistoryEvent[] {
  const stale = cycle(1, 1, 100, 1, {
    releaseAt: 2110,
    lostSignal: true,
    readSeq: 0,
    write: staleWrite,
    writeSeq: 1,
    writeStartAt: 2106,
    writeEndAt: 2107,
  });
  const fresh = cycle(2, 2, 1200, 1);
  const freeze: FaultEvent = { type: 'fault', kind: 'sigstop-worker', targets: [1], start: 105, end: 2105 };
  const last = staleWrite === 'accepted' ? stale : fresh;
  return [stale, fresh, freeze, final(last)];
}

describe('chaos checker', () => {
  it('passes a clean history and counts its cycles', () => {
    const report = checkHistory(cleanHistory());
    expect(report.cycles).toBe(3);
    expect(report.cyclesPerWorker).toEqual({ '1': 2, '2': 1 });
    expect(report.violationCount).toBe(0);
    expect(report.passed).toBe(true);
  });

  it('allows a holder frozen past its TTL whose stale write fencing rejected', () => {
    const report = checkHistory(frozenHolder('rejected'));
    expect(report.overlaps.expiredHolders.frozen).toBe(1);
    expect(report.violationCount).toBe(0);
  });

  it('flags a frozen holder whose stale write was accepted', () => {
    const report = checkHistory(frozenHolder('accepted'));
    expect(report.violations.staleWritesAccepted).toBe(1);
    expect(report.passed).toBe(false);
  });

  it('flags two valid holders at once (overlap without any freeze)', () => {
    const a = cycle(1, 1, 100, 1, { releaseAt: 150 });
    const b = cycle(2, 2, 120, 2);
    const report = checkHistory([a, b, final(b)]);
    expect(report.violations.unsafeOverlaps).toBe(1);
    expect(report.examples[0]).toContain('both valid holders');
    expect(report.passed).toBe(false);
  });

  it('flags a fenced write accepted out of order', () => {
    const a = cycle(1, 5, 100, 1);
    const b = cycle(2, 4, 120, 2); // lower token accepted after token 5 had written
    const report = checkHistory([a, b, final(b)]);
    expect(report.violations.outOfOrderAccepted).toBeGreaterThanOrEqual(1);
    expect(report.passed).toBe(false);
  });

  it('flags a lost write: an acknowledged value missing from a later read', () => {
    const a = cycle(1, 1, 100, 1);
    const b = cycle(2, 2, 120, 2);
    const c = cycle(1, 3, 140, 1, { readSeq: 0 }); // read sequence 0 after 2 was acknowledged
    const report = checkHistory([a, b, c, final(c)]);
    expect(report.violations.lostWrites).toBeGreaterThanOrEqual(1);
  });

  it('flags a lost write: the final value is older than the last acknowledged one', () => {
    const [a, b, c] = cleanHistory() as CycleEvent[];
    const report = checkHistory([a!, b!, c!, final(b!)]);
    expect(report.violations.lostWrites).toBe(1);
  });

  it('flags a fencing token that did not grow', () => {
    const a = cycle(1, 7, 100, 1);
    const b = cycle(2, 7, 120, 2);
    const report = checkHistory([a, b, final(b)]);
    expect(report.violations.tokenRegressions).toBe(1);
  });

  it('measures quorum loss and recovery, and flags a lock granted without a majority', () => {
    const down: FaultEvent = { type: 'fault', kind: 'kill-majority', targets: [0, 1], start: 1000, end: 3000 };
    const before = cycle(1, 1, 900, 1);
    const err: ErrorEvent = { type: 'error', worker: 2, resource: 'r', error: 'QuorumUnavailableError', callAt: 1100, at: 1105 };
    const slow: ErrorEvent = { ...err, callAt: 990, at: 1040 };
    const after1 = cycle(1, 2, 3050, 2);
    const after2 = cycle(2, 3, 3200, 3);
    const ok = checkHistory([before, err, slow, after1, after2, down, final(after2)]);
    expect(ok.quorum.windows).toBe(1);
    expect(ok.quorum.reports).toBe(2);
    expect(ok.quorum.firstReportMs).toBe(40);
    expect(ok.quorum.maxReportMs).toBe(40);
    expect(ok.quorum.recoveryMs).toBe(50);
    expect(ok.quorum.allWorkersRecoveredMs).toBe(200);
    expect(ok.passed).toBe(true);

    const granted = cycle(2, 2, 1500, 2);
    const bad = checkHistory([before, granted, down, final(granted)]);
    expect(bad.violations.grantedWithoutQuorum).toBe(1);
  });
});
