import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DemoSummary } from '../../sample-app/src/demo/summary.js';
import { buildSampleApp, runNode } from './build-sample-app.js';

/** `npm run demo -- --short`: 5 Redis nodes, 3 app processes, faults, the database check. */
describe('race demo (short mode)', () => {
  let dir: string;

  beforeAll(() => {
    buildSampleApp();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-demo-'));
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function demo(...flags: string[]): Promise<{ code: number | null; summary: DemoSummary; output: string }> {
    const run = runNode(
      'sample-app/dist/demo/demo.js',
      ['--short', '--json', '--data-dir', join(dir, flags.join('') || 'locks'), ...flags],
      {
        ...process.env,
      },
    );
    const code = await run.exit;
    const line = /^DEMO-SUMMARY (.*)$/m.exec(run.stdout());
    if (!line) throw new Error(`no summary (exit ${code}):\n${run.stdout()}\n${run.stderr()}`);
    return { code, summary: JSON.parse(line[1]!) as DemoSummary, output: run.stdout() };
  }

  it('with locks: exit 0, no order paid twice, and the frozen holder’s stale write was rejected', async () => {
    const { code, summary, output } = await demo();
    expect(summary.ordersPaidTwice).toBe(0);
    expect(summary.ledger.paidTwice).toBe(0);
    expect(summary.ledger.payments).toBe(summary.ledger.paidOrders);
    expect(summary.requests).toBeGreaterThanOrEqual(600);
    expect(summary.conflicts).toBeGreaterThan(0);
    expect(summary.freeze).toMatchObject({ ok: true, frozenOutcome: 'stale' });
    expect(BigInt(summary.freeze!.winnerToken!)).toBeGreaterThan(BigInt(summary.freeze!.staleToken));
    expect(summary.staleWritesRejected).toBeGreaterThanOrEqual(1);
    expect(summary.ledger.staleWritesRejected).toBeGreaterThanOrEqual(1);
    expect(output).toMatch(/ORDERS PAID TWICE\s+0/);
    // The primitives tour ran before the race, every rule held, and the dashboard was announced.
    const parts = Object.fromEntries(summary.tour!.parts.map((p) => [p.name, p]));
    expect(Object.keys(parts).sort()).toEqual(['cohorting', 'fair lock', 'read-write lock', 'semaphore']);
    for (const p of summary.tour!.parts) expect(p).toMatchObject({ ran: true, ok: true });
    expect(parts['read-write lock']!.figures).toMatchObject({ writerOverlaps: 0, tokensIncreasing: true });
    expect(parts['fair lock']!.figures).toMatchObject({ orderKept: true });
    expect(parts['semaphore']!.figures.atOnce).toBeLessThanOrEqual(2);
    expect(parts['cohorting']!.figures).toMatchObject({ overlaps: 0 });
    expect(parts['cohorting']!.figures.value).toBe(parts['cohorting']!.figures.increments);
    expect(output).toMatch(/lock dashboard \(the locks of every instance\): http:\/\/127\.0\.0\.1:\d+\/locks\/dashboard/);
    expect(code).toBe(0);
  }, 120_000);

  it('with --no-locks: the same run charges orders twice and exits 1', async () => {
    const { code, summary } = await demo('--no-locks');
    expect(summary.mode).toBe('no-locks');
    expect(summary.ordersPaidTwice).toBeGreaterThan(0);
    expect(summary.freeze).toMatchObject({ frozenOutcome: 'paid' });
    expect(summary.tour).toBeUndefined();
    expect(code).toBe(1);
  }, 120_000);
});
