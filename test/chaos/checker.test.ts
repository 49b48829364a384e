/**
 * The chaos checker judges hand-made histories: a clean one passes, and each kind of
 * violation is caught. This is what proves a "0 violations" chaos report means something.
 */
import { describe, expect, it } from '@jest/globals';
import { checkHistory } from '../../chaos/src/checker.js';
import type { CycleEvent, ErrorEvent, FaultEvent, FinalEvent, HistoryEvent, SetupEvent } from '../../chaos/src/history.js';

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

/**
 * An unfenced cycle of `worker` on resource `p` holding [at, at+10): the single-resource
 * SET NX path, no token, no store access.
 */
function plainCycle(worker: number, at: number, over: Partial<CycleEvent> = {}): CycleEvent {
  cycleNo++;
  return {
    type: 'cycle',
    worker,
    cycle: cycleNo,
    resource: 'p',
    fenced: false,
    callAt: at - 2,
    acquiredAt: at,
    validUntil: at + 1000,
    releaseAt: at + 10,
    lostSignal: false,
    read: 'skipped',
    readSeq: null,
    write: 'skipped',
    writeSeq: null,
    writeStartAt: null,
    writeEndAt: null,
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

    // A local hand-off passes on an earlier grant's lease (no acquire round): not a grant in the window.
    const handedOff: CycleEvent = { ...granted, handoff: true };
    expect(checkHistory([before, handedOff, down, final(handedOff)]).violations.grantedWithoutQuorum).toBe(0);
  });

  describe('false outages', () => {
    const setup: SetupEvent = { type: 'setup', nodes: 3 };
    const quorumError = (at: number, over: Partial<ErrorEvent> = {}): ErrorEvent => ({
      type: 'error',
      worker: 1,
      resource: 'r',
      error: 'QuorumUnavailableError',
      callAt: at - 50,
      at,
      ...over,
    });

    it('flags QuorumUnavailableError while a majority of nodes was up and unpaused', () => {
      const minorityDown: FaultEvent = { type: 'fault', kind: 'kill-minority', targets: [0], start: 1000, end: 2000 };
      const report = checkHistory([setup, minorityDown, quorumError(1500), quorumError(10_000, { worker: 2 })]);
      expect(report.falseOutageChecked).toBe(true);
      expect(report.violations.falseOutages).toBe(2);
      expect(report.examples.join('\n')).toMatch(/w2 got QuorumUnavailableError on r .* while 3 of 3 lock nodes were up/);
      expect(report.passed).toBe(false);
    });

    it('accepts it while a majority was down or paused, just before a kill was recorded, or while the node reconnects', () => {
      const majority: FaultEvent = { type: 'fault', kind: 'pause-majority', targets: [0, 1], start: 1000, end: 2000 };
      // Two single-node faults overlapping one call: two nodes down for that call.
      const a: FaultEvent = { type: 'fault', kind: 'restart-node', targets: [0], start: 5000, end: 5100 };
      const b: FaultEvent = { type: 'fault', kind: 'rolling-restart', targets: [2], start: 5900, end: 7000 };
      const report = checkHistory([
        setup,
        majority,
        a,
        b,
        quorumError(1500),
        quorumError(1000 - 100, { callAt: 800 }),
        quorumError(5950, { callAt: 5050 }),
        quorumError(2900, { callAt: 2900 }),
      ]);
      expect(report.violations.falseOutages).toBe(0);
      expect(report.passed).toBe(true);
    });

    it('accepts it from a worker frozen during the call, and ignores other errors', () => {
      const freeze: FaultEvent = { type: 'fault', kind: 'sigstop-worker', targets: [1], start: 1000, end: 2200 };
      const report = checkHistory([
        setup,
        freeze,
        quorumError(2300, { callAt: 900 }),
        quorumError(1500, { error: 'LockNotAcquiredError', worker: 2 }),
      ]);
      expect(report.violations.falseOutages).toBe(0);
      // The same error from a worker that was not frozen is a false outage.
      expect(checkHistory([setup, freeze, quorumError(2300, { callAt: 900, worker: 2 })]).violations.falseOutages).toBe(1);
    });

    it('does not run without the node count (histories from before the setup event)', () => {
      const report = checkHistory([quorumError(1500)]);
      expect(report.falseOutageChecked).toBe(false);
      expect(report.violations.falseOutages).toBe(0);
    });
  });

  describe('unfenced (plain) cycles', () => {
    it('counts plain and fenced cycles apart and passes a clean mixed history', () => {
      const p1 = plainCycle(1, 100, { watchdog: true });
      const p2 = plainCycle(2, 120);
      const report = checkHistory([...cleanHistory(), p1, p2]);
      expect(report.cycles).toBe(5);
      expect(report.fencedCycles).toBe(3);
      expect(report.plainCycles).toBe(2);
      expect(report.plainWatchdogCycles).toBe(1);
      // Writes are counted for the fenced cycles only.
      expect(report.writes).toEqual({ accepted: 3, rejected: 0, skipped: 0, errors: 0, readsRejected: 0 });
      expect(report.passed).toBe(true);
    });

    it('flags two plain holders whose validity intervals overlap, the earlier one named first', () => {
      const a = plainCycle(1, 100, { releaseAt: 150 });
      const b = plainCycle(2, 120);
      const report = checkHistory([a, b]);
      expect(report.violations.unsafeOverlaps).toBe(1);
      expect(report.overlaps.plainPairs).toBe(1);
      // Without tokens, older and newer are ordered by acquire time.
      expect(report.examples[0]).toMatch(
        new RegExp(`^w1#${a.cycle}\\(unfenced, 100\\.\\..*and w2#${b.cycle}\\(unfenced, 120\\..*both valid holders of p$`),
      );
      expect(report.passed).toBe(false);
    });

    it('classifies a plain holder frozen past its validity as expired, not unsafe', () => {
      // Worker 1 holds p (valid 100..1100), is frozen 105..2105 and releases at 2110; worker 2 gets p at 1200.
      const frozen = plainCycle(1, 100, { releaseAt: 2110, lostSignal: true });
      const fresh = plainCycle(2, 1200);
      const freeze: FaultEvent = { type: 'fault', kind: 'sigstop-worker', targets: [1], start: 105, end: 2105 };
      const report = checkHistory([fresh, frozen, freeze]);
      expect(report.overlaps.pairs).toBe(1);
      expect(report.overlaps.expiredHolders).toEqual({ frozen: 1, 'lost-signalled': 0, stalled: 0 });
      expect(report.violationCount).toBe(0);

      // The same without a freeze: a holder stalled past its validity, still not unsafe.
      const stalled = checkHistory([fresh, { ...frozen, lostSignal: false }]);
      expect(stalled.overlaps.expiredHolders.stalled).toBe(1);
      expect(stalled.violationCount).toBe(0);
    });

    it('never takes a token or a write from a plain cycle, whatever its fields say', () => {
      // Were these read as fenced, they would be a token regression (token 1 twice), two accepted
      // writes of one sequence number, and an accepted write with no final value for p.
      const bogus = { token: '1', read: 'accepted', readSeq: 0, write: 'accepted', writeSeq: 1 } as const;
      const p1 = plainCycle(1, 100, { ...bogus, writeStartAt: 104, writeEndAt: 106 });
      const p2 = plainCycle(2, 120, { ...bogus, writeStartAt: 124, writeEndAt: 126 });
      // On a fenced resource too: a plain cycle reading sequence 0 after 3 was acknowledged.
      const onR = plainCycle(2, 200, { resource: 'r', token: '0', read: 'accepted', readSeq: 0 });
      const report = checkHistory([...cleanHistory(), p1, p2, onR]);
      expect(report.violations.tokenRegressions).toBe(0);
      expect(report.violations.lostWrites).toBe(0);
      expect(report.violations.staleWritesAccepted).toBe(0);
      expect(report.violations.outOfOrderAccepted).toBe(0);
      expect(report.writes.accepted).toBe(3);
      expect(report.passed).toBe(true);

      // The same cycles marked fenced are caught, so the above is not a blind checker.
      const asFenced = [p1, p2, onR].map((c) => ({ ...c, fenced: true }));
      const caught = checkHistory([...cleanHistory(), ...asFenced]);
      expect(caught.violations.tokenRegressions).toBeGreaterThan(0);
      expect(caught.violations.lostWrites).toBeGreaterThan(0);
    });

    it('refuses a fenced cycle without a token as a corrupt history', () => {
      const { token: _token, ...noToken } = cycle(1, 1, 100, 1);
      expect(() => checkHistory([noToken])).toThrow('has no token');
    });
  });
});

describe('chaos checker: fair lock queue order', () => {
  /**
   * Worker 1 calls at 1000 and waits; worker 2 calls at 1600 (clearly later) and holds
   * [2000, 2010) while worker 1 is still waiting; worker 1 gets the lock at 2020.
   */
  function overtaken(faults: FaultEvent[] = []): HistoryEvent[] {
    const early = cycle(1, 2, 2020, 2, { callAt: 1000, fairTicket: 5, releaseAt: 2030 });
    const late = cycle(2, 1, 2000, 1, { callAt: 1600, fairTicket: 6 });
    return [late, early, final(early), ...faults];
  }

  it('flags a fair waiter overtaken by one that called clearly later', () => {
    const report = checkHistory(overtaken());
    expect(report.fairCycles).toBe(2);
    expect(report.fairPairsChecked).toBe(1);
    expect(report.violations.fairOrder).toBe(1);
    expect(report.examples.join('\n')).toContain('was granted before worker 1');
  });

  it("allows it when a fault overlapped the earlier waiter's wait (it may have been dropped as dead)", () => {
    const pause: FaultEvent = { type: 'fault', kind: 'sigstop-worker', targets: [1], start: 1200, end: 1300 };
    expect(checkHistory(overtaken([pause])).violations.fairOrder).toBe(0);
  });

  it('does not order calls too close to tell which queued first', () => {
    const a = cycle(1, 2, 2020, 2, { callAt: 1000, fairTicket: 5, releaseAt: 2030 });
    const b = cycle(2, 1, 2000, 1, { callAt: 1100, fairTicket: 6 });
    const report = checkHistory([b, a, final(a)]);
    expect(report.fairPairsChecked).toBe(0);
    expect(report.violations.fairOrder).toBe(0);
  });

  describe('Redis Cluster runs (one lock node: the cluster)', () => {
    const setup: SetupEvent = { type: 'setup', nodes: 1 };
    const failover: FaultEvent = { type: 'fault', kind: 'kill-master', targets: [0], start: 1000, end: 5000 };

    it('a lock lost in a failover and reported (lost signal) is no violation while no one else held it within its validity', () => {
      // Valid 100..1100; its key vanished with the master at 1000, the watchdog reported the loss.
      const lost = cycle(1, 1, 100, 1, { releaseAt: 1500, lostSignal: true, watchdog: true });
      const next = cycle(2, 2, 1200, 2);
      const report = checkHistory([setup, failover, lost, next, final(next)]);
      expect(report.overlaps.expiredHolders['lost-signalled']).toBe(1);
      expect(report.violationCount).toBe(0);
    });

    it('two holders whose validity overlaps are a violation even when a failover lost the first lock and it was reported', () => {
      const lost = cycle(1, 1, 100, 1, { releaseAt: 1500, lostSignal: true, watchdog: true });
      // Granted by the promoted replica at 1050, while the first lock was valid until 1100.
      const second = cycle(2, 2, 1050, 2);
      const report = checkHistory([setup, failover, lost, second, final(second)]);
      expect(report.violations.unsafeOverlaps).toBe(1);
      expect(report.passed).toBe(false);
    });

    it('a QuorumUnavailableError during a master failover is the fault’s; one long after it is a false outage', () => {
      const error = (at: number): ErrorEvent => ({
        type: 'error',
        worker: 1,
        resource: 'r',
        error: 'QuorumUnavailableError',
        callAt: at - 50,
        at,
      });
      expect(checkHistory([setup, failover, error(3000)]).violations.falseOutages).toBe(0);
      expect(checkHistory([setup, failover, error(20_000)]).violations.falseOutages).toBe(1);
    });
  });
});
