/**
 * `npm run bench:profile [-- --ops=20000 --libs='redlock-nest|raw ioredis floor']`: the
 * single-worker path (acquire + release on one uncontended key, 5 local nodes) under the V8
 * CPU profiler, one library at a time, interleaved in rounds. Prints, per library, the
 * process CPU time per operation (user + system: the client's own work, which a loaded
 * machine's scheduling blurs less than latency) and the top frames by self time, grouped by
 * where the code lives. The raw profiles go to `.bench-results/*.cpuprofile` (open them in
 * Chrome DevTools). What `--cpu-prof` records, scoped to the measured loop only.
 */
import { openProfiler, reportProfile, type CpuProfile } from './cpu-profile.js';
import { createContender, type ContenderName } from './contenders.js';
import { BenchNodes } from './nodes.js';
import { median } from './stats.js';
import { printTable } from './table.js';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const OPS = Number(arg('ops') ?? 20_000);
const ROUNDS = Number(arg('rounds') ?? 3);
const LIBS = (arg('libs') ?? 'redlock-nest|redlock-nest (ioredis passed in)|raw ioredis floor').split('|') as ContenderName[];

const nodes = await BenchNodes.start(5);
const profiler = await openProfiler();
const cpuPerOp = new Map<ContenderName, number[]>();
const profiles = new Map<ContenderName, CpuProfile[]>();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? LIBS : [...LIBS].reverse()) {
      process.stderr.write(`[profile] round ${round + 1}/${ROUNDS}: ${name}\n`);
      const c = await createContender(name, nodes.urls);
      const key = `profile:${name}:${round}`;
      for (let i = 0; i < 500; i++) await (await c.acquire(key, 10_000)).release();
      const { result: cpu, profile } = await profiler.record(async () => {
        const cpu0 = process.cpuUsage();
        for (let i = 0; i < OPS; i++) await (await c.acquire(key, 10_000)).release();
        return process.cpuUsage(cpu0);
      });
      await c.close();
      cpuPerOp.set(name, [...(cpuPerOp.get(name) ?? []), (cpu.user + cpu.system) / OPS]);
      profiles.set(name, [...(profiles.get(name) ?? []), profile]);
    }
  }
} finally {
  profiler.close();
  await nodes.stop();
}

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
  reportProfile(profiles.get(name)!.at(-1)!, { title: name, file: `profile-${name}`, ops: OPS, unit: 'op', top: 15 });
}
