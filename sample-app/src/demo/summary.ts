import type { LedgerReport } from '../orders/order.types.js';
import type { FreezeReport } from './freeze-scenario.js';
import type { Tally } from './tally.js';
import type { TourReport } from './tour/tour.js';

/** Everything the demo reports, also printed as JSON with --json. */
export interface DemoSummary {
  readonly mode: 'locks' | 'no-locks';
  /** Where the locks lived: Redis nodes (Redlock) or etcd members. */
  readonly engine: 'redis' | 'etcd';
  readonly nodes: number;
  readonly instances: number;
  readonly durationMs: number;
  readonly requests: number;
  readonly paid: number;
  readonly alreadyPaid: number;
  readonly conflicts: number;
  /** Stale writes as the clients saw them (HTTP 409 StaleFencingToken). */
  readonly staleWritesRejected: number;
  readonly unavailable: number;
  readonly errors: number;
  readonly errorSamples: Record<string, number>;
  /** From the database at the end: the figures that matter. */
  readonly ledger: LedgerReport;
  readonly ordersPaidTwice: number;
  readonly cronRuns: number;
  readonly faults: readonly string[];
  readonly freeze: FreezeReport | undefined;
  /** The primitives tour (Redis, with locks only). */
  readonly tour: TourReport | undefined;
  readonly exitCode: number;
}

/**
 * 1 if any order was paid twice or a primitive of the tour broke its promise; 2 if, with locks,
 * the freeze did not produce a rejected stale write, or a part of the tour could not run.
 */
export function exitCodeOf(mode: DemoSummary['mode'], ledger: LedgerReport, freeze: FreezeReport | undefined, tour?: TourReport): number {
  if (ledger.paidTwice > 0) return 1;
  if (tour?.parts.some((p) => p.ran && !p.ok)) return 1;
  if (mode === 'locks' && !freeze?.ok) return 2;
  if (tour && !tour.ok) return 2;
  return 0;
}

export function buildSummary(args: {
  mode: DemoSummary['mode'];
  engine: DemoSummary['engine'];
  nodes: number;
  instances: number;
  durationMs: number;
  tally: Tally;
  ledger: LedgerReport;
  cronRuns: number;
  faults: readonly string[];
  freeze: FreezeReport | undefined;
  tour: TourReport | undefined;
}): DemoSummary {
  const c = args.tally.counts;
  return {
    mode: args.mode,
    engine: args.engine,
    nodes: args.nodes,
    instances: args.instances,
    durationMs: args.durationMs,
    requests: args.tally.done,
    paid: c.paid,
    alreadyPaid: c.alreadyPaid,
    conflicts: c.locked,
    staleWritesRejected: c.stale,
    unavailable: c.unavailable,
    errors: c.error + c.notFound,
    errorSamples: Object.fromEntries(args.tally.samples),
    ledger: args.ledger,
    ordersPaidTwice: args.ledger.paidTwice,
    cronRuns: args.cronRuns,
    faults: args.faults,
    freeze: args.freeze,
    tour: args.tour,
    exitCode: exitCodeOf(args.mode, args.ledger, args.freeze, args.tour),
  };
}

/** The human-readable summary. */
export function formatSummary(s: DemoSummary): string {
  const etcd = s.engine === 'etcd';
  const row = (label: string, value: string | number, note = ''): string =>
    `  ${label.padEnd(28)} ${String(value).padStart(7)}${note ? `  ${note}` : ''}`;
  const lines = [
    '',
    `Summary (${s.mode === 'locks' ? `${etcd ? 'etcd' : 'Redlock'} + fencing` : 'NO LOCKS, no fencing'}; ${s.nodes} ${etcd ? 'etcd members' : 'Redis nodes'}, ${s.instances} app instances, ${(s.durationMs / 1000).toFixed(1)} s)`,
    row('requests', s.requests),
    row('successes: paid (201)', s.paid),
    row('successes: already paid (200)', s.alreadyPaid),
    row('409/423 lock held', s.conflicts, 'answered at once, with Retry-After'),
    row(
      'stale writes rejected',
      s.staleWritesRejected,
      `fencing refused a paused holder's write (database: ${s.ledger.staleWritesRejected})`,
    ),
    row('503 quorum unavailable', s.unavailable, s.unavailable ? 'refused, not run (no quorum answered in time, see below)' : ''),
    row('other errors', s.errors),
    row('orders paid', `${s.ledger.paidOrders}/${s.ledger.orders}`, `${s.ledger.payments} payment rows`),
    row('cron job runs', s.cronRuns, 'each tick ran on one instance, the others skipped'),
  ];
  const samples = Object.entries(s.errorSamples);
  if (samples.length) lines.push('  unexpected answers (first kinds):', ...samples.map(([k, v]) => `    ${v}× ${k}`));
  if (s.faults.length) lines.push('  faults injected:', ...s.faults.map((f) => `    - ${f}`));
  if (s.freeze) lines.push(`  freeze: ${s.freeze.ok ? '' : '(!) '}${s.freeze.detail}`);
  if (s.tour) {
    const kept = s.tour.parts.filter((p) => p.ok).length;
    lines.push(`  primitives tour: ${kept} of ${s.tour.parts.length} kept their promise${s.tour.ok ? '' : ' (!), see above'}`);
  }
  lines.push(
    '',
    row(
      'ORDERS PAID TWICE',
      s.ordersPaidTwice,
      s.ordersPaidTwice === 0 ? 'OK (checked in the database)' : 'DOUBLE CHARGES (checked in the database)',
    ),
    '',
  );
  if (s.exitCode === 2) lines.push('  The demo could not stage the stale-write scenario; see the instance logs.', '');
  return lines.join('\n');
}
