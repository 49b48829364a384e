/**
 * `npm run bench:profile [-- --ops=20000 --libs='redlock-nest|raw ioredis floor']`: the
 * single-worker path (acquire + release on one uncontended key, 5 local nodes) under the V8
 * CPU profiler, one library at a time, interleaved in rounds. Prints, per library, the
 * process CPU time per operation (user + system: the client's own work, which a loaded
 * machine's scheduling blurs less than latency) and the top frames by self time, grouped by
 * where the code lives. The raw profiles go to `.bench-results/*.cpuprofile` (open them in
 * Chrome DevTools). What `--cpu-prof` records, scoped to the measured loop only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createContender, type ContenderName } from './contenders.js';
import { BenchNodes } from './nodes.js';
import { median } from './stats.js';
import { printTable } from './table.js';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const OPS = Number(arg('ops') ?? 20_000);
const ROUNDS = Number(arg('rounds') ?? 3);
const LIBS = (arg('libs') ?? 'redlock-nest|redlock-nest (ioredis passed in)|raw ioredis floor').split('|') as ContenderName[];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: ours, the Redis client, Node itself, or V8's own entries. */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : 'native';
  if (url.includes('/packages/core/')) return 'redlock-nest';
  if (url.includes('/ioredis/') || url.includes('/@ioredis/') || url.includes('/redis-parser/')) return 'ioredis';
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
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
const cpuPerOp = new Map<ContenderName, number[]>();
const profiles = new Map<ContenderName, CpuProfile[]>();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? LIBS : [...LIBS].reverse()) {
      process.stderr.write(`[profile] round ${round + 1}/${ROUNDS}: ${name}\n`);
      const c = await createContender(name, nodes.urls);
      const key = `profile:${name}:${round}`;
      for (let i = 0; i < 500; i++) await (await c.acquire(key, 10_000)).release();
      await session.post('Profiler.start');
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < OPS; i++) await (await c.acquire(key, 10_000)).release();
      const cpu = process.cpuUsage(cpu0);
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      await c.close();
      cpuPerOp.set(name, [...(cpuPerOp.get(name) ?? []), (cpu.user + cpu.system) / OPS]);
      profiles.set(name, [...(profiles.get(name) ?? []), profile]);
    }
  }
} finally {
  session.disconnect();
  await nodes.stop();
}

mkdirSync('.bench-results', { recursive: true });
const floor = cpuPerOp.get('raw ioredis floor');
printTable(
  `CPU time per acquire + release, one worker (median of ${ROUNDS} rounds of ${OPS})`,
  LIBS.map((name) => ({
    library: name,
    'CPU µs/op': median(cpuPerOp.get(name)!),
    'vs floor': floor ? median(cpuPerOp.get(name)!) / median(floor) : NaN,
  })),
);
for (const name of LIBS) {
  // The last round's profile: warmed and optimized.
  const profile = profiles.get(name)!.at(-1)!;
  writeFileSync(`.bench-results/profile-${name.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
  const { frames, areas, totalUs } = summarize(profile);
  const share = (us: number): string => `${((100 * us) / totalUs).toFixed(1)}%`;
  printTable(
    `${name}: self time by area (busy time only)`,
    [...areas].sort((a, b) => b[1] - a[1]).map(([where, us]) => ({ area: where, 'µs/op': us / OPS, share: share(us) })),
  );
  printTable(
    `${name}: top 15 frames by self time`,
    [...frames]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([frame, us]) => ({ frame, 'µs/op': us / OPS, share: share(us) })),
  );
}
