/**
 * `npm run bench [-- --quick]`: spawns 5 redis-servers on loopback and runs our library,
 * the peers and a raw ioredis floor on them in ONE run, workloads interleaved round by
 * round (the order rotates), and prints medians of the rounds plus ratios. Figures from
 * different runs or machines are not comparable; ratios within a run are the result.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createContender, PEERS, TUNED, type Contender, type ContenderName, type Profile } from './contenders.js';
import { BenchNodes } from './nodes.js';
import type { GapPercentiles } from './handoff-log.js';
import { median, rotate } from './stats.js';
import { printTable, ratio } from './table.js';
import { contend, type ContentionRun, type Shape } from './workloads/contention.js';
import { heap } from './workloads/heap.js';
import { semaphoreBench } from './workloads/semaphore.js';
import { nestBench } from './workloads/nest-table.js';
import { readWrite, RW_VARIANTS } from './workloads/read-write.js';
import { RunReport } from './report.js';
import { extend, latency, throughput, type LatencyResult } from './workloads/uncontended.js';

const quick = process.argv.includes('--quick');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const cfg = quick
  ? { rounds: 2, latencyOps: 300, tpMs: 600, extendOps: 200, contRounds: 1, contMs: 1_500, nestOps: 300, heapCycles: 50_000 }
  : { rounds: 5, latencyOps: 2_000, tpMs: 2_000, extendOps: 1_000, contRounds: 2, contMs: 3_000, nestOps: 2_000, heapCycles: 1_000_000 };
/** Each phase of the read-write run (healthy, then 2 of 5 nodes paused). */
const rwPhaseMs = quick ? 5_000 : 15_000;
const want = (section: string): boolean => !only || only.includes(section);
/** `--shape=4x4`, `--profile=tuned`, `--libs=redlock-nest|redis-semaphore`: a narrower contention run, while tuning. */
const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const OURS: ContenderName = 'redlock-nest';
const FLOOR: ContenderName = 'raw ioredis floor';
const FLOOR_POLLING: ContenderName = 'raw floor, polling';
const results: Record<string, unknown> = { quick, cpus: cpus().length, node: process.version, startedAt: new Date().toISOString() };
const report = new RunReport({ quick, node: process.version });

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function uncontended(nodes: BenchNodes): Promise<void> {
  const names: ContenderName[] = [OURS, 'redlock-nest (ioredis passed in)', 'redlock-nest (no restart rule)', ...PEERS, FLOOR];
  const contenders = new Map<ContenderName, Contender>();
  for (const name of names) contenders.set(name, await createContender(name, nodes.urls));
  const lat = new Map<ContenderName, LatencyResult[]>();
  const tp = new Map<ContenderName, number[]>();
  const ext = new Map<ContenderName, LatencyResult[]>();
  for (let round = 0; round < cfg.rounds; round++) {
    log(`uncontended round ${round + 1}/${cfg.rounds}`);
    for (const name of rotate(names, round)) {
      const c = contenders.get(name)!;
      // Warmed alike and long enough for every library's code to be optimized (a service runs warm).
      if (round === 0) await latency(c, 1_000, `${name}:warm`);
      lat.set(name, [...(lat.get(name) ?? []), await latency(c, cfg.latencyOps, name)]);
      tp.set(name, [...(tp.get(name) ?? []), await throughput(c, 64, cfg.tpMs, name)]);
      if (name !== FLOOR) ext.set(name, [...(ext.get(name) ?? []), await extend(c, cfg.extendOps, name)]);
    }
  }
  for (const c of contenders.values()) await c.close();
  const floorP50 = median(lat.get(FLOOR)!.map((r) => r.p50Us));
  const bestPeerTp = Math.max(...PEERS.map((p) => median(tp.get(p)!)));
  const bestPeerP50 = Math.min(...PEERS.map((p) => median(lat.get(p)!.map((r) => r.p50Us))));
  const rows = names.map((name) => {
    const l = lat.get(name)!;
    const p50 = median(l.map((r) => r.p50Us));
    const e = ext.get(name);
    return {
      library: name,
      'p50 µs': p50,
      'p99 µs': median(l.map((r) => r.p99Us)),
      '1-worker ops/s': median(l.map((r) => r.opsPerSec)),
      'speed vs floor': ratio(floorP50, p50),
      '64-worker ops/s': median(tp.get(name)!),
      'vs best peer': ratio(median(tp.get(name)!), bestPeerTp),
      'extend p50 µs': e ? median(e.map((r) => r.p50Us)) : NaN,
      'extend ops/s': e ? median(e.map((r) => r.opsPerSec)) : NaN,
    };
  });
  printTable('Uncontended (acquire+release; TTL 10 s; speed = floor p50 / p50, >1 is faster)', rows);
  const ours = rows[0]!;
  console.log(
    `  ours: latency ${ratio(floorP50, ours['p50 µs'])}× the floor, ${ratio(bestPeerP50, ours['p50 µs'])}× the best peer; ` +
      `64-worker throughput ${ours['vs best peer']}× the best peer\n`,
  );
  results.uncontended = rows;
  const floorTp = median(tp.get(FLOOR)!);
  const speed = names.map((name) => ({
    library: name,
    latencyVsFloor: floorP50 / median(lat.get(name)!.map((r) => r.p50Us)),
    throughputVsFloor: median(tp.get(name)!) / floorTp,
  }));
  report.speedChart(
    speed,
    `medians of ${cfg.rounds} interleaved rounds, 5 local redis-servers, ${cpus().length} CPUs${quick ? ', --quick' : ''}`,
  );
  report.track('uncontended: latency vs floor', speed[0]!.latencyVsFloor, 'higher', false);
  report.track('uncontended: 64-worker throughput vs floor', speed[0]!.throughputVsFloor, 'higher', false);
  report.track('uncontended: 64-worker throughput vs best peer', median(tp.get(OURS)!) / bestPeerTp, 'higher', false);
}

/** Contention shapes run every time: one process × 16 workers, 4 × 4 and 8 × 2 (a multi-instance deployment). */
const SHAPES: readonly Shape[] = [
  { processes: 1, workers: 16, holdMs: 1, pauseMs: 3 },
  { processes: 4, workers: 4, holdMs: 1, pauseMs: 3 },
  { processes: 8, workers: 2, holdMs: 1, pauseMs: 3 },
];
const PROFILES: readonly Profile[] = (['defaults', 'tuned'] as const).filter((p) => (arg('profile') ?? p) === p);
const CONTENDERS: readonly ContenderName[] = (
  [OURS, 'redlock-nest (polling)', 'redlock-nest (fair)', ...PEERS, FLOOR_POLLING] as const
).filter((n) => arg('libs')?.split('|').includes(n) ?? true);

async function contention(nodes: BenchNodes, shape: Shape): Promise<void> {
  const label = `${shape.processes} process${shape.processes > 1 ? 'es' : ''} × ${shape.workers} workers`;
  // Every (library, profile) pair of a round runs back to back, in an order that rotates.
  const pairs = PROFILES.flatMap((profile) => CONTENDERS.map((name) => ({ name, profile })));
  const runs = new Map<string, ContentionRun[]>();
  const id = (name: ContenderName, profile: Profile): string => `${profile}:${name}`;
  for (let round = 0; round < cfg.contRounds; round++) {
    for (const { name, profile } of rotate(pairs, round)) {
      log(`contention ${label}, ${profile} round ${round + 1}/${cfg.contRounds}: ${name}`);
      const key = `cont:${shape.processes}x${shape.workers}:${profile}:${round}:${name}`;
      try {
        const run = await contend(name, profile, nodes, shape, cfg.contMs, key);
        runs.set(id(name, profile), [...(runs.get(id(name, profile)) ?? []), run]);
      } catch (err) {
        log(`  ${name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  for (const profile of PROFILES) {
    const of = (name: ContenderName): ContentionRun[] | undefined => runs.get(id(name, profile));
    const med = (name: ContenderName, pick: (r: ContentionRun) => number): number => median(of(name)?.map(pick) ?? []);
    const peers = PEERS.filter((p) => of(p));
    const bestPeerGap = Math.min(...peers.map((p) => med(p, (r) => r.meanGapMs)));
    const fewestPeerCmds = Math.min(...peers.map((p) => med(p, (r) => r.commandsPerSection)));
    const floorRate = med(FLOOR_POLLING, (r) => r.sectionsPerSec);
    const rows = CONTENDERS.filter((n) => of(n)).map((name) => {
      const gap = med(name, (r) => r.meanGapMs);
      const cmds = med(name, (r) => r.commandsPerSection);
      return {
        library: name,
        'sections/s': med(name, (r) => r.sectionsPerSec),
        'vs polling floor': ratio(
          med(name, (r) => r.sectionsPerSec),
          floorRate,
        ),
        'mean gap ms': gap,
        'p99 gap ms': med(name, (r) => r.p99GapMs),
        'gap vs best peer': ratio(gap, bestPeerGap),
        'cmds/section': cmds,
        'cmds vs fewest peer': ratio(cmds, fewestPeerCmds),
        fairness: med(name, (r) => r.fairness),
        overlaps: of(name)!.reduce((sum, x) => sum + x.overlaps, 0),
        'gave up': of(name)!.reduce((sum, x) => sum + x.failures, 0),
      };
    });
    printTable(
      `Contention, ${label}, one key, ${shape.holdMs} ms section, ${shape.pauseMs} ms pause after release; ${profile} retry timing` +
        (profile === 'tuned' ? ` (${TUNED.delayMs} ms ± ${TUNED.jitterMs} ms wherever the library allows)` : ''),
      rows,
    );
    results[`contention ${label} ${profile}`] = rows;
    const shapeId = `contention ${shape.processes}x${shape.workers} ${profile}`;
    // 4 × 4 tuned: the one contention ratio that held across back-to-back quick runs (0.089–0.10).
    const steady = shapeId === 'contention 4x4 tuned';
    report.track(`${shapeId}: sections/s vs polling floor`, med(OURS, (r) => r.sectionsPerSec) / floorRate, 'higher', false);
    report.track(`${shapeId}: gap vs best peer`, med(OURS, (r) => r.meanGapMs) / bestPeerGap, 'lower', steady);
    report.track(`${shapeId}: commands vs fewest peer`, med(OURS, (r) => r.commandsPerSection) / fewestPeerCmds, 'lower', false);
    // The gap distribution (across processes when there are several): each percentile is the median over the rounds.
    const cross = shape.processes > 1;
    const dist = (name: ContenderName): GapPercentiles => {
      const ps = of(name)!.map((r) => (cross ? r.crossGapPercentiles : r.gapPercentiles));
      const at = (k: keyof GapPercentiles): number => median(ps.map((p) => p[k]));
      return { p10: at('p10'), p25: at('p25'), p50: at('p50'), p75: at('p75'), p90: at('p90'), p99: at('p99') };
    };
    report.gapChart(
      `gaps-${shape.processes}x${shape.workers}-${profile}.svg`,
      `Hand-off gaps${cross ? ' from one process to another' : ''}, ${label} on one key (${profile} retry timing)`,
      `release → the next holder's acquire resolved, on a clock the processes share; ${cfg.contRounds} round(s) of ${cfg.contMs / 1000} s`,
      CONTENDERS.filter((n) => of(n)).map((name) => ({ label: name, p: dist(name) })),
    );
  }
}

async function heapRun(nodes: BenchNodes): Promise<void> {
  log(`heap: ${cfg.heapCycles} cycles`);
  const r = await heap(nodes.urls, cfg.heapCycles);
  printTable(`Heap over ${r.cycles} acquire/release cycles (live heap after gc, MB)`, [
    {
      first: r.readingsMb[0]!,
      max: Math.max(...r.readingsMb),
      last: r.readingsMb.at(-1)!,
      growth: r.growthMb,
      'left after close': Object.keys(r.leftAfterClose).length ? JSON.stringify(r.leftAfterClose) : 'nothing',
    },
  ]);
  results.heap = r;
}

async function readWriteRun(nodes: BenchNodes): Promise<void> {
  const phases = [];
  for (const variant of RW_VARIANTS) phases.push(...(await readWrite(nodes, rwPhaseMs, `rw:${Date.now()}`, variant, log)));
  printTable(
    `Read-write, 3 processes × (3 readers, 1 writer, 1 plain lock) on one key, ${rwPhaseMs / 1000} s per phase; ` +
      'sections per 1-second window (min 0 = a side stalled), commands per section of any kind; overlaps must be 0',
    phases.map((p) => ({ ...p })),
  );
  results.readwrite = phases;
  for (const p of phases) report.track(`readwrite ${p.phase}: commands per section`, p['cmds/section'], 'lower', false);
  // Pooled over the healthy phases of both variants: twice the sections, half the noise of either.
  const healthy = phases.filter((p) => p.phase.endsWith('healthy'));
  const pooled = healthy.reduce((sum, p) => sum + p['cmds/section'] * p.sections, 0) / healthy.reduce((sum, p) => sum + p.sections, 0);
  report.track('readwrite healthy: commands per section', pooled, 'lower', true);
}

const nodes = await BenchNodes.start(5);
const started = performance.now();
try {
  console.log(`redlock-nest benchmark${quick ? ' (quick)' : ''}: 5 local redis-servers, ${cpus().length} CPUs, Node ${process.version}\n`);
  if (want('uncontended')) await uncontended(nodes);
  const shapes = SHAPES.filter((s) => (arg('shape') ?? `${s.processes}x${s.workers}`) === `${s.processes}x${s.workers}`);
  if (want('contention')) for (const shape of shapes) await contention(nodes, shape);
  if (want('semaphore')) {
    const sem = await semaphoreBench(nodes, { rounds: cfg.rounds, ops: cfg.latencyOps, durationMs: cfg.contMs });
    results.semaphore = sem;
    report.track('semaphore: latency vs peer', sem.ratios.latencyVsPeer, 'higher', false);
    report.track('semaphore: contended sections/s vs peer', sem.ratios.rateVsPeer, 'higher', false);
    report.track('semaphore: contended commands vs peer', sem.ratios.commandsVsPeer, 'lower', true);
  }
  if (want('nest')) {
    const table = await nestBench(nodes.urls, cfg, log);
    results.nest = table.rows;
    report.track('nest: @WithLock rate vs bare using()', table.withLockVsBare, 'higher', false);
    report.track('nest: @LockRoute rate vs no-op guard+interceptor', table.lockRouteVsNoop, 'higher', false);
  }
  if (want('heap')) await heapRun(nodes);
  // Last: it pauses two nodes (resumed before it returns).
  if (want('readwrite')) await readWriteRun(nodes);
} finally {
  await nodes.stop();
}
console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
mkdirSync('.bench-results', { recursive: true });
results.ratios = report.tracked;
writeFileSync(`.bench-results/bench-${Date.now()}.json`, JSON.stringify(results, null, 2));
process.exitCode = report.finish(process.argv);
