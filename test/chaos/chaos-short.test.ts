/**
 * The CI chaos run: `npm run chaos -- --short` end to end (worker processes, a nemesis
 * that kills, pauses and restarts lock nodes, loses the quorum twice and freezes
 * workers past their TTL, restarts every node empty one at a time, and runs a waiter
 * storm and a burst on healthy nodes), with fenced and unfenced cycles, then the checker's
 * verdict: zero violations (the unsafe-overlap check covers the unfenced cycles too; a
 * QuorumUnavailableError while a majority was up is a false outage).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChaosReport } from '../../chaos/src/checker.js';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { CHAOS_MAIN, buildChaosCli, runNode } from './chaos-cli.js';

describe('chaos (short mode)', () => {
  let dir: string;
  let report: ChaosReport;
  let output: string;
  let status: number | null;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'redlock-chaos-test-'));
    buildChaosCli();
    const out = join(dir, 'report.json');
    const chaos = runNode([...CHILD_GUARD_ARGS, CHAOS_MAIN, '--short', '--out', out], 150_000);
    output = chaos.output;
    status = chaos.status;
    report = (JSON.parse(readFileSync(out, 'utf8')) as { report: ChaosReport }).report;
  }, 200_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0: no violation, and no process warning in the orchestrator or a worker', () => {
    expect({ status, warnings: output.match(/process warning.*/g) ?? [] }).toEqual({ status: 0, warnings: [] });
  });

  it('completes lock cycles in every worker, several loops per worker handing locks off locally', () => {
    expect(output).toMatch(/local hand-offs \(cohorting\): [1-9]\d*/);
    expect(Object.keys(report.cyclesPerWorker)).toHaveLength(4);
    for (const n of Object.values(report.cyclesPerWorker)) expect(n).toBeGreaterThan(0);
    expect(report.writes.accepted).toBeGreaterThan(0);
  });

  it('also ran unfenced single-resource cycles (the SET NX path), with acquire and with using()', () => {
    expect(report.plainCycles).toBeGreaterThan(0);
    expect(report.plainWatchdogCycles).toBeGreaterThan(0);
    expect(report.fencedCycles).toBeGreaterThan(0);
    expect(report.plainCycles + report.fencedCycles).toBe(report.cycles);
    expect(output).toMatch(/cycles fenced \/ plain +\| \d+ \/ [1-9]\d*/);
  });

  it('injected every kind of fault, the two majority losses included', () => {
    for (const kind of [
      'kill-minority',
      'pause-minority',
      'restart-node',
      'kill-majority',
      'pause-majority',
      'sigstop-worker',
      'busy-worker',
      'rolling-restart',
      'waiter-storm',
      'burst',
    ]) {
      expect(`${kind}: ${report.faults[kind as keyof typeof report.faults] ?? 0}`).not.toBe(`${kind}: 0`);
    }
  });

  it('restarted every node empty, one at a time, each catching up on the fencing counters before the next', () => {
    const steps = report.scenarios.filter((line) => line.startsWith('rolling-restart'));
    expect(steps).toHaveLength(3);
    for (const step of steps) expect(step).toContain('caughtUp true');
  });

  it('ran the overload scenarios to the end: every waiter of the storm and every acquisition of the burst got its lock', () => {
    for (const kind of ['waiter-storm', 'burst']) {
      const line = report.scenarios.find((l) => l.startsWith(kind));
      expect(line).toBeDefined();
      const size = /size (\d+)/.exec(line!)![1];
      expect(line).toContain(`granted ${size}`);
    }
  });

  it('reported the quorum loss as QuorumUnavailableError, under the 1 s target, and recovered', () => {
    expect(report.quorum.windows).toBe(2);
    expect(report.quorum.reports).toBeGreaterThan(0);
    expect(report.quorum.targetMet).toBe(true);
    expect(report.quorum.recoveryMs).not.toBeNull();
  });

  it('fencing refused the write of the holder frozen past its TTL', () => {
    expect(report.staleByDesign.attempted).toBeGreaterThanOrEqual(1);
    expect(report.staleByDesign.rejected).toBe(report.staleByDesign.attempted);
  });

  it('ran read-write lock and semaphore holds next to the lock cycles', () => {
    expect(report.primitives.reads).toBeGreaterThan(0);
    expect(report.primitives.writes).toBeGreaterThan(0);
    expect(report.primitives.permits).toBeGreaterThan(0);
    expect(report.primitives.maxPermitHolders).toBeGreaterThanOrEqual(1);
  });

  it('finds zero violations', () => {
    if (!report.passed) console.error(output);
    expect(report.violations).toEqual({
      unsafeOverlaps: 0,
      staleWritesAccepted: 0,
      outOfOrderAccepted: 0,
      lostWrites: 0,
      tokenRegressions: 0,
      grantedWithoutQuorum: 0,
      falseOutages: 0,
      readWriteOverlaps: 0,
      permitOverflows: 0,
      fairOrder: 0,
    });
    expect(report.falseOutageChecked).toBe(true);
    expect(report.passed).toBe(true);
    expect(output).toContain('PASS (0 violations)');
  });
});
