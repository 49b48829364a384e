/**
 * `npm run chaos -- --short --etcd` end to end: the same workers, cycles and checker as the
 * Redis run, with every worker locking through EtcdLocks on a 3-member etcd cluster, and a
 * nemesis that kills and pauses the leader, restarts and kills members, loses the majority twice
 * (killed, then paused), freezes workers past their TTL and runs a waiter storm and a burst.
 * The verdict: zero violations.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChaosReport } from '../../chaos/src/checker.js';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { CHAOS_MAIN, buildChaosCli, runNode } from './chaos-cli.js';

describe('chaos on etcd (short mode)', () => {
  let dir: string;
  let report: ChaosReport;
  let output: string;
  let status: number | null;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'redlock-chaos-etcd-test-'));
    buildChaosCli();
    const out = join(dir, 'report.json');
    const chaos = runNode([...CHILD_GUARD_ARGS, CHAOS_MAIN, '--short', '--etcd', '--out', out], 150_000);
    output = chaos.output;
    status = chaos.status;
    report = (JSON.parse(readFileSync(out, 'utf8')) as { report: ChaosReport }).report;
  }, 200_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 on an etcd cluster of 3 members: no violation, no process warning', () => {
    expect(output).toContain('an etcd cluster of 3 members');
    expect({ status, warnings: output.match(/process warning.*/g) ?? [] }).toEqual({ status: 0, warnings: [] });
  });

  it('injected the leader faults, member restarts, both majority losses and the worker freezes', () => {
    for (const kind of [
      'kill-leader',
      'pause-leader',
      'restart-node',
      'kill-minority',
      'kill-majority',
      'pause-majority',
      'sigstop-worker',
      'busy-worker',
    ]) {
      expect(`${kind}: ${report.faults[kind as keyof typeof report.faults] ?? 0}`).not.toBe(`${kind}: 0`);
    }
    // Each leader fault moved the lead: the record names the old leader and the one after.
    for (const kind of ['kill-leader', 'pause-leader']) {
      expect(report.scenarios.find((l) => l.startsWith(kind))).toMatch(/leader m\d, after m\d/);
    }
  });

  it('completed fenced, plain, read-write and semaphore cycles in every worker', () => {
    expect(Object.keys(report.cyclesPerWorker)).toHaveLength(4);
    for (const n of Object.values(report.cyclesPerWorker)) expect(n).toBeGreaterThan(0);
    expect(report.fencedCycles).toBeGreaterThan(0);
    expect(report.plainCycles).toBeGreaterThan(0);
    expect(report.primitives.reads + report.primitives.writes).toBeGreaterThan(0);
    expect(report.primitives.permits).toBeGreaterThan(0);
    expect(report.writes.accepted).toBeGreaterThan(0);
  });

  it('fencing refused the write of the holder frozen past its TTL', () => {
    expect(report.staleByDesign.attempted).toBeGreaterThanOrEqual(1);
    expect(report.staleByDesign.rejected).toBe(report.staleByDesign.attempted);
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
    expect(report.passed).toBe(true);
  });
});
