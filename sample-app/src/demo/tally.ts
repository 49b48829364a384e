import { fieldText, type HttpResult } from './http-client.js';

/** How one payment request ended, as the client sees it. */
export type Outcome = 'paid' | 'alreadyPaid' | 'locked' | 'stale' | 'unavailable' | 'notFound' | 'error';

/** Live counters of the load generator (read by the progress line and the summary). */
export class Tally {
  sent = 0;
  done = 0;
  readonly counts: Record<Outcome, number> = {
    paid: 0,
    alreadyPaid: 0,
    locked: 0,
    stale: 0,
    unavailable: 0,
    notFound: 0,
    error: 0,
  };
  /** A few distinct unexpected answers, for the summary (never thousands of lines). */
  readonly samples = new Map<string, number>();
  /** Called after every recorded answer (the fault timeline hangs off this). */
  onRecord: (() => void) | undefined;

  record(outcome: Outcome, detail?: string): void {
    this.done++;
    this.counts[outcome]++;
    if (detail !== undefined && (this.samples.has(detail) || this.samples.size < 5)) {
      this.samples.set(detail, (this.samples.get(detail) ?? 0) + 1);
    }
    this.onRecord?.();
  }
}

/** Maps an HTTP answer of POST /orders/:id/pay to an outcome. */
export function classify(result: HttpResult): Outcome {
  const code = fieldText(result.body.code ?? result.body.error);
  if (result.status === 201) return 'paid';
  if (result.status === 200) return 'alreadyPaid';
  if (/stale/i.test(code)) return 'stale';
  if (result.status === 409 || result.status === 423) return 'locked';
  if (result.status === 503) return 'unavailable';
  if (result.status === 404) return 'notFound';
  return 'error';
}
