/**
 * `npm run bench:nest-profile [-- --ops=5000 --rounds=3 --only='@WithLock|bare using()']`: the
 * NestJS variants of the benchmark (workloads/nest.ts) under the V8 CPU profiler, one variant at
 * a time, interleaved in rounds. Prints, per variant, the process CPU time per call, paired per
 * round against its baseline (`@WithLock` against the bare `using()`, `@LockRoute` against the
 * no-op guard + interceptor), and the top frames by self time, grouped by where the code lives:
 * where the layer's per-call time goes. Raw profiles go to `.bench-results/*.cpuprofile`.
 */
import { openProfiler, reportProfile, type CpuProfile } from './cpu-profile.js';
import { BenchNodes } from './nodes.js';
import { median } from './stats.js';
import { printTable } from './table.js';
import { NEST_VARIANTS, nestRound, startNest, stopNest, type NestVariant } from './workloads/nest.js';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const OPS = Number(arg('ops') ?? 5_000);
const ROUNDS = Number(arg('rounds') ?? 3);
const TOP = Number(arg('top') ?? 20);
const ONLY = arg('only')?.split('|') as NestVariant[] | undefined;
const VARIANTS = ONLY ?? NEST_VARIANTS;

/** What each variant's overhead is measured against. */
const BASELINE: Partial<Record<NestVariant, NestVariant>> = {
  '@WithLock': 'bare using()',
  'HTTP @LockRoute': 'HTTP no-op guard+interceptor',
  'HTTP no-op guard+interceptor': 'HTTP bare using()',
};

const nodes = await BenchNodes.start(5);
const bench = await startNest(nodes.urls);
const profiler = await openProfiler();
const cpuPerCall = new Map<NestVariant, number[]>();
const profiles = new Map<NestVariant, CpuProfile>();
try {
  for (const v of VARIANTS) await nestRound(bench, v, 500);
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      process.stderr.write(`[nest-profile] round ${round + 1}/${ROUNDS}: ${v}\n`);
      const {
        result: { cpuUs },
        profile,
      } = await profiler.record(() => nestRound(bench, v, OPS));
      cpuPerCall.set(v, [...(cpuPerCall.get(v) ?? []), cpuUs]);
      profiles.set(v, profile); // the last round's: warmed and optimized
    }
  }
} finally {
  profiler.close();
  await stopNest(bench);
  await nodes.stop();
}

printTable(
  `CPU time per call (median of ${ROUNDS} rounds of ${OPS}; overhead paired per round)`,
  VARIANTS.map((v) => {
    const base = BASELINE[v];
    const paired = base && cpuPerCall.has(base) ? cpuPerCall.get(v)!.map((us, i) => us / cpuPerCall.get(base)![i]! - 1) : undefined;
    return {
      variant: v,
      'CPU µs/call': median(cpuPerCall.get(v)!),
      against: base ?? '–',
      overhead: paired ? `${(median(paired) * 100).toFixed(1)}%` : '–',
    };
  }),
);
for (const v of VARIANTS) {
  reportProfile(profiles.get(v)!, { title: v, file: `nest-profile-${v}`, ops: OPS, unit: 'call', top: TOP });
}
