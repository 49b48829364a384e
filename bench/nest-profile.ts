/**
 * `npm run bench:nest-profile [-- --ops=5000 --rounds=3 --only='@WithLock|bare using()']`: the
 * NestJS variants of the benchmark (workloads/nest.ts) under the V8 CPU profiler, one variant at
 * a time, interleaved in rounds. Prints, per variant, the process CPU time per call, paired per
 * round against its baseline (`@WithLock` against the bare `using()`, `@LockRoute` against the
 * no-op guard + interceptor), and the top frames by self time, grouped by where the code lives:
 * where the layer's per-call time goes. Raw profiles go to `.bench-results/*.cpuprofile`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
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

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: our Nest layer, our core, Nest, Express, rxjs, the Redis client, Node, V8. */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : 'native';
  if (url.includes('/packages/nestjs/')) return 'redlock-nest/nestjs';
  if (url.includes('/packages/core/')) return 'redlock-nest/core';
  if (url.includes('/@nestjs/')) return '@nestjs';
  if (url.includes('/rxjs/')) return 'rxjs';
  if (url.includes('/ioredis/') || url.includes('/@ioredis/') || url.includes('/redis-parser/')) return 'ioredis';
  if (url.includes('/node_modules/')) return `other (${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? '?'})`;
  if (url.startsWith('node:')) return 'node';
  return 'other';
}

/** Self time (µs) per frame and per area, idle excluded. */
function summarize(profile: CpuProfile): { frames: Map<string, number>; areas: Map<string, number>; totalUs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const frames = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') return;
    const us = profile.timeDeltas[i] ?? 0;
    const file = url.split('/').slice(-1)[0] ?? '';
    const frame = `${functionName || '(anonymous)'} ${file}${file ? `:${lineNumber + 1}` : ''}`;
    frames.set(frame, (frames.get(frame) ?? 0) + us);
    const a = area(url, functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
    totalUs += us;
  });
  return { frames, areas, totalUs };
}

const nodes = await BenchNodes.start(5);
const bench = await startNest(nodes.urls);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
const cpuPerCall = new Map<NestVariant, number[]>();
const profiles = new Map<NestVariant, CpuProfile>();
try {
  for (const v of VARIANTS) await nestRound(bench, v, 500);
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      process.stderr.write(`[nest-profile] round ${round + 1}/${ROUNDS}: ${v}\n`);
      await session.post('Profiler.start');
      const { cpuUs } = await nestRound(bench, v, OPS);
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      cpuPerCall.set(v, [...(cpuPerCall.get(v) ?? []), cpuUs]);
      profiles.set(v, profile); // the last round's: warmed and optimized
    }
  }
} finally {
  session.disconnect();
  await stopNest(bench);
  await nodes.stop();
}

mkdirSync('.bench-results', { recursive: true });
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
  const profile = profiles.get(v)!;
  writeFileSync(`.bench-results/nest-profile-${v.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
  const { frames, areas, totalUs } = summarize(profile);
  const share = (us: number): string => `${((100 * us) / totalUs).toFixed(1)}%`;
  printTable(
    `${v}: self time by area (busy time only)`,
    [...areas].sort((a, b) => b[1] - a[1]).map(([where, us]) => ({ area: where, 'µs/call': us / OPS, share: share(us) })),
  );
  printTable(
    `${v}: top ${TOP} frames by self time`,
    [...frames]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([frame, us]) => ({ frame, 'µs/call': us / OPS, share: share(us) })),
  );
}
