import { HttpClient } from '../http-client.js';
import { fairPart, hotKeyPart, priceListPart, semaphorePart, type TourPart } from './tour-parts.js';

/** What the primitives tour found, also in the demo's JSON summary. */
export interface TourReport {
  readonly ok: boolean;
  readonly durationMs: number;
  readonly parts: readonly TourPart[];
}

/** A part that could not run at all: reported, and it fails the tour. */
function broken(name: string, err: unknown): TourPart {
  const message = err instanceof Error ? err.message : String(err);
  return { name, ran: false, ok: false, line: `${name}: could not run (${message})`, figures: {} };
}

/**
 * Drives every primitive of the sample app at once on all instances, with several concurrent
 * requests each, so an open dashboard shows locks, readers, permits and a fair queue live; then
 * checks what each one promises from the sections the instances report (one machine, one clock):
 * readers overlapped, writers serialised with rising fencing tokens, the fair order kept, the
 * permits never exceeded, no increment of the hot key lost. The payments race covers plain locks.
 */
export async function runTour(urls: readonly string[], lockNodes: readonly string[], short: boolean): Promise<TourReport> {
  const started = performance.now();
  // Its own connections: the load generator's pools are sized for the payments.
  const clients = urls.map((url) => new HttpClient(url, 16));
  const rounds = short ? 3 : 6;
  try {
    const parts = await Promise.all([
      priceListPart(clients, rounds).catch((err: unknown) => broken('read-write lock', err)),
      fairPart(clients, lockNodes, short ? 6 : 9).catch((err: unknown) => broken('fair lock', err)),
      semaphorePart(clients, rounds).catch((err: unknown) => broken('semaphore', err)),
      hotKeyPart(clients, rounds).catch((err: unknown) => broken('cohorting', err)),
    ]);
    return { ok: parts.every((p) => p.ok), durationMs: Math.round(performance.now() - started), parts };
  } finally {
    for (const c of clients) c.close();
  }
}

/** The tour's lines for the terminal. */
export function formatTour(report: TourReport): string {
  return [
    `Primitives tour (${(report.durationMs / 1000).toFixed(1)} s):`,
    ...report.parts.map((p) => `  ${p.ok ? 'ok ' : '(!)'} ${p.line}`),
    '',
  ].join('\n');
}
