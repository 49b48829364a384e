/**
 * `npm run bench:etcd [-- --quick]`: the lock engines side by side in ONE run: one Redis node,
 * Redlock on 5 Redis nodes, and EtcdLocks on a 3-member etcd cluster, all spawned on loopback.
 * Uncontended acquire + release latency (one worker) and throughput (64 workers on 64 keys),
 * interleaved round by round (the order rotates); then contention on one key by 4 processes ×
 * 4 workers: hand-off gap and fairness. Medians of the rounds and ratios to etcd; only ratios
 * within a run mean something.
 */
import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { EtcdCluster, RedisCluster } from '@redlock-nest/redis-process';
import type { Contender } from './contender.js';
import { createEngineContender, type EngineName, type EngineTargets } from './engine-contenders.js';
import { summarize, type ContentionResult, type Section } from './handoff-log.js';
import { median, nowMs, rotate } from './stats.js';
import { printTable, ratio } from './table.js';
import type { FromChild, Shape, ToChild } from './workloads/contention.js';
import { latency, throughput, type LatencyResult } from './workloads/uncontended.js';

const quick = process.argv.includes('--quick');
const cfg = quick
  ? { rounds: 2, latencyOps: 100, tpMs: 1_000, contRounds: 1, contMs: 3_000 }
  : { rounds: 3, latencyOps: 400, tpMs: 2_000, contRounds: 2, contMs: 5_000 };
const ENGINES: readonly EngineName[] = ['Redis, 1 node', 'Redlock, 5 nodes', 'etcd, 3 members'];
const CONTENDED: readonly EngineName[] = [
  'Redis, 1 node',
  'Redis, 1 node (fair)',
  'Redlock, 5 nodes',
  'Redlock, 5 nodes (fair)',
  'etcd, 3 members',
];
const ETCD: EngineName = 'etcd, 3 members';
const SHAPE: Shape = { processes: 4, workers: 4, holdMs: 1, pauseMs: 3 };
const results: Record<string, unknown> = { quick, cpus: cpus().length, node: process.version, startedAt: new Date().toISOString() };

function log(message: string): void {
  process.stderr.write(`[bench:etcd] ${message}\n`);
}

async function uncontended(targets: EngineTargets): Promise<void> {
  const contenders = new Map<EngineName, Contender>(ENGINES.map((name) => [name, createEngineContender(name, targets)]));
  const lat = new Map<EngineName, LatencyResult[]>();
  const tp = new Map<EngineName, number[]>();
  for (let round = 0; round < cfg.rounds; round++) {
    log(`uncontended round ${round + 1}/${cfg.rounds}`);
    for (const name of rotate(ENGINES, round)) {
      const c = contenders.get(name)!;
      if (round === 0) await latency(c, 20, `${name}:warm`);
      lat.set(name, [...(lat.get(name) ?? []), await latency(c, cfg.latencyOps, name)]);
      tp.set(name, [...(tp.get(name) ?? []), await throughput(c, 64, cfg.tpMs, name)]);
    }
  }
  for (const c of contenders.values()) await c.close();
  const etcdP50 = median(lat.get(ETCD)!.map((r) => r.p50Us));
  const etcdTp = median(tp.get(ETCD)!);
  const rows = ENGINES.map((name) => {
    const p50 = median(lat.get(name)!.map((r) => r.p50Us));
    const rate = median(tp.get(name)!);
    return {
      engine: name,
      'p50 ms': p50 / 1000,
      'p99 ms': median(lat.get(name)!.map((r) => r.p99Us)) / 1000,
      'etcd p50 ÷ this': ratio(etcdP50, p50),
      '64-worker ops/s': rate,
      'this ÷ etcd ops/s': ratio(rate, etcdTp),
    };
  });
  printTable('Uncontended acquire + release (TTL 10 s; ratios > 1: this engine is faster than etcd by that factor)', rows);
  results.uncontended = rows;
}

const WORKER = fileURLToPath(new URL('./engine-worker.js', import.meta.url));

/** One contention run of `name`: SHAPE.processes children on one key until the deadline. */
async function contend(name: EngineName, targets: EngineTargets, key: string): Promise<ContentionResult & { failures: number }> {
  const children = Array.from({ length: SHAPE.processes }, () =>
    fork(WORKER, [JSON.stringify({ name, key, targets, shape: SHAPE })], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const sections: Section[] = [];
  let failures = 0;
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('exit', (code) => reject(new Error(`a ${name} child exited with ${code} before it was ready`)));
            child.on('message', (m: FromChild) => m.type === 'ready' && resolve());
          }),
      ),
    );
    const finished = children.map(
      (child, p) =>
        new Promise<void>((resolve) =>
          child.on('message', (m: FromChild) => {
            if (m.type !== 'done') return;
            for (const s of m.sections) sections.push({ ...s, worker: p * SHAPE.workers + s.worker });
            failures += m.failures;
            resolve();
          }),
        ),
    );
    const start = nowMs();
    for (const child of children) child.send({ type: 'go', until: start + cfg.contMs } satisfies ToChild);
    await Promise.all(finished);
    return { ...summarize(sections, SHAPE.processes * SHAPE.workers, cfg.contMs), failures };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

async function contention(targets: EngineTargets): Promise<void> {
  const runs = new Map<EngineName, Array<ContentionResult & { failures: number }>>();
  for (let round = 0; round < cfg.contRounds; round++) {
    for (const name of rotate(CONTENDED, round)) {
      log(`contention 4 × 4, round ${round + 1}/${cfg.contRounds}: ${name}`);
      runs.set(name, [...(runs.get(name) ?? []), await contend(name, targets, `engines:${round}:${name}`)]);
    }
  }
  const etcdGap = median(runs.get(ETCD)!.map((r) => r.meanGapMs));
  const rows = CONTENDED.map((name) => {
    const of = runs.get(name)!;
    const gap = median(of.map((r) => r.meanGapMs));
    return {
      engine: name,
      'sections/s': median(of.map((r) => r.sectionsPerSec)),
      'mean gap ms': gap,
      'p99 gap ms': median(of.map((r) => r.p99GapMs)),
      'etcd gap ÷ this': ratio(etcdGap, gap),
      fairness: median(of.map((r) => r.fairness)),
      overlaps: of.reduce((sum, r) => sum + r.overlaps, 0),
      'gave up': of.reduce((sum, r) => sum + r.failures, 0),
    };
  });
  printTable(
    `Contention, 4 processes × 4 workers, one key, ${SHAPE.holdMs} ms section, ${SHAPE.pauseMs} ms pause; fairness = fewest sections of a worker / mean`,
    rows,
  );
  results.contention = rows;
}

const [single, five, etcd] = await Promise.all([
  RedisCluster.start(1),
  RedisCluster.start(5),
  EtcdCluster.start({ members: 3, heartbeatMs: 100, electionMs: 1_000 }),
]);
const targets: EngineTargets = { single: single.urls, five: five.urls, etcd: etcd.hosts };
const started = performance.now();
try {
  console.log(
    `redlock-nest engines benchmark${quick ? ' (quick)' : ''}: 1 + 5 local redis-servers (${single.version}), ` +
      `3 local etcd members, ${cpus().length} CPUs, Node ${process.version}\n`,
  );
  await uncontended(targets);
  await contention(targets);
} finally {
  await Promise.all([single.stop(), five.stop(), etcd.stop()]);
}
console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
mkdirSync('.bench-results', { recursive: true });
writeFileSync(`.bench-results/engines-${Date.now()}.json`, JSON.stringify(results, null, 2));
