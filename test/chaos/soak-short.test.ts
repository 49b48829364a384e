/**
 * A short soak in CI: 20,000 cycles (plain, contended, watchdog) through the soak CLI in
 * its own process, then close. Run apart from the test runner, whose own timers and
 * sockets would blur the count: no handle the Redlock opened may be left after close(),
 * and the process must exit by itself (soak mode does not call process.exit).
 * (The full million: `npm run chaos -- --soak`.)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { SoakReport } from '../../chaos/src/soak.js';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { CHAOS_MAIN, buildChaosCli, runNode, type CliRun } from './chaos-cli.js';

describe('soak (short)', () => {
  let dir: string;
  let run: CliRun;
  let report: SoakReport;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'redlock-soak-test-'));
    buildChaosCli();
    const out = join(dir, 'soak.json');
    run = runNode([...CHILD_GUARD_ARGS, '--expose-gc', CHAOS_MAIN, '--soak', '--cycles', '20000', '--out', out], 120_000);
    report = JSON.parse(readFileSync(out, 'utf8')) as SoakReport;
  }, 250_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs 20,000 cycles of every kind, at most 2 of them failed by load', () => {
    expect(report.cycles).toBe(20_000);
    expect(report.watchdogCycles).toBeGreaterThan(0);
    expect(report.contendedCycles).toBeGreaterThan(0);
    // A long stall on a loaded CI machine may (correctly) lose a lock now and then; more is a bug.
    expect(Object.values(report.errors).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2);
    expect(report.samples.length).toBeGreaterThan(10);
  });

  it('leaves no handle behind once close() resolves', () => {
    expect(report.leftHandles).toEqual({});
  });

  it('lets the process exit by itself', () => {
    // Killed by the timeout (signal set, status null) would mean something kept it alive.
    expect({ status: run.status, signal: run.signal }).toEqual({ status: 0, signal: null });
  });
});
