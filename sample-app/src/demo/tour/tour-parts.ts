import { Redlock } from '@redlock-nest/core';
import { EXPORT_PERMITS } from '../../exports/exports.service.js';
import { parseSection, SECTION_HEADER, type Section } from '../../sections/section.js';
import { fieldText, type HttpClient, type HttpResult } from '../http-client.js';
import { exclusionBreaks, maxConcurrent, tokensIncrease } from './intervals.js';

/** What one part of the tour saw: its figures, a line for the summary, and whether its rule held. */
export interface TourPart {
  readonly name: string;
  /** False when the part could not run at all (the demo failed, not the primitive). */
  readonly ran: boolean;
  readonly ok: boolean;
  readonly line: string;
  readonly figures: Readonly<Record<string, number | boolean | string>>;
}

/** Sends `count` requests at once to every instance, `rounds` times; returns every answer. */
async function waves(
  clients: readonly HttpClient[],
  rounds: number,
  count: number,
  send: (c: HttpClient, i: number) => Promise<HttpResult>,
) {
  const answers: HttpResult[] = [];
  for (let round = 0; round < rounds; round++) {
    const wave = clients.flatMap((c) => Array.from({ length: count }, (_, i) => send(c, round * count + i)));
    answers.push(...(await Promise.all(wave)));
  }
  return answers;
}

const sectionOf = (r: HttpResult): Section => r.body.section as Section;

/** Read-write lock: readers of every instance together; fenced writers alone, tokens rising. */
export async function priceListPart(clients: readonly HttpClient[], rounds: number): Promise<TourPart> {
  const answers = await waves(clients, rounds, 5, (c, i) =>
    // One writer in every five requests, among the readers: it waits for them, then runs alone.
    i % 5 === 2 ? c.put(`/prices/sku-${(i % 4) + 1}`, { priceCents: 1_000 + i }) : c.get('/prices'),
  );
  const ok200 = answers.filter((r) => r.status === 200);
  const reads = ok200.filter((r) => Array.isArray(r.body.prices)).map(sectionOf);
  const writes = ok200
    .filter((r) => r.body.fence !== undefined)
    .map((r) => ({ section: sectionOf(r), fence: BigInt(fieldText(r.body.fence)) }));
  const readersAtOnce = maxConcurrent(reads);
  const breaks = exclusionBreaks(
    writes.map((w) => w.section),
    reads,
  );
  const rising = tokensIncrease(writes);
  const failed = answers.length - ok200.length;
  return {
    name: 'read-write lock',
    ran: true,
    ok: breaks === 0 && rising,
    line:
      `price list: ${reads.length} reads, ${writes.length} fenced writes; readers overlapped (up to ${readersAtOnce} at once), ` +
      `writers serialised (${breaks} overlaps), tokens ${rising ? 'increasing' : 'NOT increasing'}${failed ? `; ${failed} refused` : ''}`,
    figures: {
      reads: reads.length,
      writes: writes.length,
      readersAtOnce,
      writerOverlaps: breaks,
      tokensIncreasing: rising,
      refused: failed,
    },
  };
}

/** Semaphore: never more than EXPORT_PERMITS exports of one tenant at once; the rest refused at once. */
export async function semaphorePart(clients: readonly HttpClient[], rounds: number): Promise<TourPart> {
  const answers = await waves(clients, rounds, 3, (c) => c.get('/tenants/demo/orders.csv'));
  const ran = answers.filter((r) => r.status === 200).map((r) => parseSection(r.headers[SECTION_HEADER])!);
  const refused = answers.filter((r) => r.status === 409).length;
  const atOnce = maxConcurrent(ran);
  return {
    name: 'semaphore',
    ran: true,
    ok: atOnce <= EXPORT_PERMITS && ran.length + refused === answers.length,
    line: `exports (${EXPORT_PERMITS} permits): ${ran.length} ran, ${refused} refused at once (409); at most ${atOnce} at once, permits never exceeded: ${atOnce <= EXPORT_PERMITS ? 'yes' : 'NO'}`,
    figures: { ran: ran.length, refused, atOnce, permits: EXPORT_PERMITS },
  };
}

/** Plain lock on a hot key: no two increments at once, none lost, most of them local hand-offs. */
export async function hotKeyPart(clients: readonly HttpClient[], rounds: number): Promise<TourPart> {
  const answers = await waves(clients, rounds, 8, (c) => c.post('/counters/demo-hot/increment'));
  const done = answers.filter((r) => r.status === 201);
  const sections = done.map(sectionOf);
  const views = await Promise.all(clients.map((c) => c.get('/counters/demo-hot')));
  const value = Number(views[0]!.body.value);
  const counts = views.map((v) => v.body.acquisitions as { fromNodes: number; handoffs: number });
  const handoffs = counts.reduce((n, c) => n + c.handoffs, 0);
  const fromNodes = counts.reduce((n, c) => n + c.fromNodes, 0);
  const breaks = exclusionBreaks(sections);
  return {
    name: 'cohorting',
    ran: true,
    ok: breaks === 0 && value === done.length,
    line:
      `hot key: ${done.length} increments, counter ${value} (${value === done.length ? 'none lost' : 'LOST UPDATES'}), ${breaks} overlaps; ` +
      `${handoffs} local hand-offs, ${fromNodes} acquisitions on the nodes`,
    figures: { increments: done.length, value, overlaps: breaks, handoffs, fromNodes },
  };
}

/**
 * Fair lock: the demo holds `batch:demo` itself, submits jobs to the instances in turn, each
 * once the previous one is queued on the nodes (`inspect` shows the queue), then lets go:
 * the jobs must run in the order they were submitted.
 */
export async function fairPart(clients: readonly HttpClient[], nodes: readonly string[], jobs: number): Promise<TourPart> {
  const redlock = new Redlock([...nodes]);
  const submitted: string[] = [];
  const calls: Array<Promise<HttpResult>> = [];
  try {
    const holder = await redlock.acquire('batch:demo', 30_000, { fair: true });
    try {
      for (let j = 1; j <= jobs; j++) {
        const job = `job-${j}`;
        submitted.push(job);
        calls.push(clients[j % clients.length]!.post(`/batches/demo/${job}`));
        // The queue lives on the nodes: look at it there (as the dashboard does) until this job is in it.
        const giveUp = Date.now() + 10_000;
        while (((await redlock.inspect('batch:demo')).fairQueue?.length ?? 0) < j) {
          if (Date.now() > giveUp) throw new Error(`${job} was not queued on the nodes within 10 s`);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    } finally {
      await holder.release();
    }
    await Promise.all(calls);
    const ran = ((await clients[0]!.get('/batches/demo')).body as unknown as Array<{ job: string }>).map((r) => r.job);
    const kept = ran.join() === submitted.join();
    return {
      name: 'fair lock',
      ran: true,
      ok: kept,
      line: `batches (fair lock): ${jobs} jobs queued across ${clients.length} instances ran ${kept ? 'in order of arrival' : `OUT OF ORDER: ${ran.join(' ')}`}`,
      figures: { jobs, orderKept: kept, ran: ran.join(' ') },
    };
  } finally {
    await redlock.close();
  }
}
