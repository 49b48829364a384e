/** The NestJS table of the benchmark: the variants of nest.ts interleaved in chunks, overheads paired per round. */
import { median, rotate } from '../stats.js';
import { printTable } from '../table.js';
import { NEST_VARIANTS, nestRound, startNest, stopNest, type NestVariant } from './nest.js';

/** Calls of one NestJS variant in a row before the next variant's turn. */
const NEST_CHUNK = 100;

/** Paired medians of the variants' rates per round: the ratios the regression guard tracks. */
export interface NestTable {
  readonly rows: ReadonlyArray<Record<string, string | number>>;
  /** `@WithLock`'s call rate over the bare `using()`'s (paired per round, median). */
  readonly withLockVsBare: number;
  /** `@LockRoute`'s call rate over the no-op guard + interceptor route's. */
  readonly lockRouteVsNoop: number;
}

/**
 * The NestJS variants, `rounds` rounds of `ops` calls each, printed as one table.
 *
 * @example
 * ```ts
 * const { rows } = await nestBench(nodes.urls, { rounds: 5, nestOps: 2_000 }, console.error);
 * ```
 */
export async function nestBench(
  urls: readonly string[],
  cfg: { rounds: number; nestOps: number },
  log: (m: string) => void,
): Promise<NestTable> {
  const bench = await startNest(urls);
  const rates = new Map<NestVariant, number[]>();
  const cpu = new Map<NestVariant, number[]>();
  try {
    for (const v of NEST_VARIANTS) await nestRound(bench, v, 50);
    // Within a round the variants take turns in chunks of NEST_CHUNK calls (the order rotating), so a
    // change of load on a shared machine hits every variant alike instead of the one running then.
    for (let round = 0; round < cfg.rounds; round++) {
      log(`nest round ${round + 1}/${cfg.rounds}`);
      const spent = new Map<NestVariant, { ms: number; cpuUs: number }>(NEST_VARIANTS.map((v) => [v, { ms: 0, cpuUs: 0 }]));
      for (let chunk = 0; chunk < Math.ceil(cfg.nestOps / NEST_CHUNK); chunk++) {
        for (const v of rotate(NEST_VARIANTS, round + chunk)) {
          const r = await nestRound(bench, v, NEST_CHUNK);
          const s = spent.get(v)!;
          s.ms += (NEST_CHUNK * 1000) / r.rate;
          s.cpuUs += r.cpuUs * NEST_CHUNK;
        }
      }
      const calls = Math.ceil(cfg.nestOps / NEST_CHUNK) * NEST_CHUNK;
      for (const [v, s] of spent) {
        rates.set(v, [...(rates.get(v) ?? []), (calls * 1000) / s.ms]);
        cpu.set(v, [...(cpu.get(v) ?? []), s.cpuUs / calls]);
      }
    }
  } finally {
    await stopNest(bench);
  }
  const base: Record<NestVariant, NestVariant> = {
    'bare using()': 'bare using()',
    '@WithLock': 'bare using()',
    'HTTP bare using()': 'HTTP bare using()',
    'HTTP no-op guard+interceptor': 'HTTP bare using()',
    'HTTP @LockRoute': 'HTTP bare using()',
  };
  // Paired per round (the variants of one round ran interleaved), then the median of the
  // rounds: drift of the machine between rounds cancels out.
  const overhead = (v: NestVariant, against: NestVariant): string => {
    const ours = rates.get(v)!;
    const theirs = rates.get(against)!;
    const perRound = ours.map((rate, i) => theirs[i]! / rate - 1);
    return `${(median(perRound) * 100).toFixed(1)}%`;
  };
  // The same pairing on CPU time per call: what the layer costs in work, which waits and a loaded
  // machine's scheduling blur less than the wall clock.
  const cpuOverhead = (v: NestVariant, against: NestVariant): string => {
    const theirs = cpu.get(against)!;
    const perRound = cpu.get(v)!.map((us, i) => us / theirs[i]! - 1);
    return `${(median(perRound) * 100).toFixed(1)}%`;
  };
  const rows = NEST_VARIANTS.map((v) => {
    const rate = median(rates.get(v)!);
    return {
      variant: v,
      'calls/s': rate,
      'µs/call': 1e6 / rate,
      'overhead vs bare': overhead(v, base[v]),
      'vs no-op guard+interceptor': v === 'HTTP @LockRoute' ? overhead(v, 'HTTP no-op guard+interceptor') : '–',
      'CPU µs/call': median(cpu.get(v)!),
      'CPU vs bare': cpuOverhead(v, base[v]),
      'CPU vs no-op': v === 'HTTP @LockRoute' ? cpuOverhead(v, 'HTTP no-op guard+interceptor') : '–',
    };
  });
  printTable('NestJS layer (sequential calls; overhead = extra time per call vs the bare using() of the same kind)', rows);
  const paired = (v: NestVariant, against: NestVariant): number => median(rates.get(v)!.map((rate, i) => rate / rates.get(against)![i]!));
  return {
    rows,
    withLockVsBare: paired('@WithLock', 'bare using()'),
    lockRouteVsNoop: paired('HTTP @LockRoute', 'HTTP no-op guard+interceptor'),
  };
}
