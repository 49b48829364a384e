/**
 * `LOCK_ENGINE=etcd npm run demo -- --short`: the race demo on a 3-member etcd cluster, its
 * leader killed half-way and restarted, one app instance frozen past its lock's TTL. No order
 * is paid twice (checked in the database) and the frozen holder's write is refused as stale.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DemoSummary } from '../../sample-app/src/demo/summary.js';
import { buildSampleApp, runNode } from './build-sample-app.js';

describe('race demo on etcd (short mode)', () => {
  let dir: string;

  beforeAll(() => {
    buildSampleApp();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-demo-etcd-'));
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exit 0: no order paid twice, the leader killed and back, the frozen holder refused', async () => {
    const run = runNode('sample-app/dist/demo/demo.js', ['--short', '--json', '--data-dir', join(dir, 'etcd')], {
      ...process.env,
      LOCK_ENGINE: 'etcd',
    });
    const code = await run.exit;
    const line = /^DEMO-SUMMARY (.*)$/m.exec(run.stdout());
    if (!line) throw new Error(`no summary (exit ${code}):\n${run.stdout()}\n${run.stderr()}`);
    const summary = JSON.parse(line[1]!) as DemoSummary;
    expect(summary).toMatchObject({ engine: 'etcd', nodes: 3, mode: 'locks' });
    expect(summary.ordersPaidTwice).toBe(0);
    expect(summary.ledger.payments).toBe(summary.ledger.paidOrders);
    expect(summary.requests).toBeGreaterThanOrEqual(600);
    expect(summary.faults.some((f) => /^etcd leader \S+ killed \(SIGKILL\) at 50 %, restarted at 80 %$/.test(f))).toBe(true);
    expect(summary.freeze).toMatchObject({ ok: true, frozenOutcome: 'stale' });
    expect(BigInt(summary.freeze!.winnerToken!)).toBeGreaterThan(BigInt(summary.freeze!.staleToken));
    expect(run.stdout()).toContain('Summary (etcd + fencing; 3 etcd members');
    expect(run.stdout()).toMatch(/ORDERS PAID TWICE\s+0/);
    expect(code).toBe(0);
  }, 180_000);
});
