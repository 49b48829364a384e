/**
 * `npm run bench:cluster [-- --quick] [-- --scaling | --sync | --many]`: three parts, all by default.
 *
 * - `--scaling`: throughput with shards: a single node, a 1-shard and a 3-shard Redis Cluster
 *   (no replicas), at 64 and 512 workers, the load from 1 and from 4 client processes
 *   (cluster-load.ts), as ratios against the single node under the same load.
 * - `--sync`: what `replicaSync` costs, on a plain master with one replica and on a 3-shard
 *   cluster with a replica per master (one client process, latency and throughput).
 * - `--many`: 1,000,000 distinct locks acquired in batches, held, then released, on a single
 *   node and on a 3-shard cluster: rates, server memory and client heap per lock (cluster-million.ts).
 *
 * Every configuration of a part runs in the same run, rounds interleaved (the order rotates);
 * the result is the ratios within this run, not the absolute figures.
 */
import { cpus } from 'node:os';
import { Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { RedisClusterMode, RedisServer } from '@redlock-nest/redis-process';
import { throughputFromProcesses } from './cluster-load.js';
import { manyLocks } from './cluster-million.js';
import { median, percentile, rotate } from './stats.js';
import { printTable, ratio } from './table.js';

const quick = process.argv.includes('--quick');
const parts = ['--scaling', '--sync', '--many'].filter((p) => process.argv.includes(p));
const run = (part: string): boolean => parts.length === 0 || parts.includes(part);
const cfg = quick
  ? { rounds: 2, tpMs: 800, latencyOps: 300, many: 100_000 }
  : { rounds: 5, tpMs: 2_000, latencyOps: 2_000, many: 1_000_000 };
/** Concurrent acquisitions per batch of the many-locks part. */
const MANY_BATCH = 10_000;
const TTL = 10_000;
const quiet: RedlockOptions = { onWarning: () => {} };
const synced: RedlockOptions = { ...quiet, replicaSync: { replicas: 1, timeoutMs: 200 } };

function log(message: string): void {
  process.stderr.write(`[bench:cluster] ${message}\n`);
}

/** `workers` loops, each on its own resource, for `durationMs`: acquire+release per second. */
async function throughput(redlock: Redlock, workers: number, durationMs: number, tag: string): Promise<number> {
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const resource = `tp:${tag}:${w}`;
      while (performance.now() < end) {
        const lock = await redlock.acquire(resource, TTL);
        await lock.release();
        done++;
      }
    }),
  );
  return (done * 1000) / (performance.now() - start);
}

/** One acquire+release at a time: p50 in µs. */
async function latency(redlock: Redlock, ops: number, tag: string): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < ops; i++) {
    const t0 = performance.now();
    const lock = await redlock.acquire(`lat:${tag}`, TTL);
    await lock.release();
    samples.push((performance.now() - t0) * 1000);
  }
  return percentile(samples, 50);
}

interface Setup {
  readonly name: string;
  readonly nodes: ReadonlyArray<RedisNodeInput>;
  readonly options: RedlockOptions;
}

/** Throughput with shards, the load from 1 and from 4 processes. */
async function scaling(): Promise<void> {
  log('scaling: starting one single node, a 1-shard and a 3-shard cluster (no replicas)');
  const single = await RedisServer.start();
  const one = await RedisClusterMode.start({ masters: 1, replicas: 0 });
  const three = await RedisClusterMode.start({ masters: 3, replicas: 0 });
  try {
    const topologies: Array<{ name: string; nodes: RedisNodeInput[] }> = [
      { name: 'single node', nodes: [single.url] },
      { name: '1-shard cluster', nodes: [{ cluster: one.urls }] },
      { name: '3-shard cluster', nodes: [{ cluster: three.urls }] },
    ];
    const setups = [1, 4].flatMap((processes) => topologies.map((t) => ({ ...t, processes, key: `${t.name}, ${processes} proc` })));
    const results = new Map<string, number[]>();
    const rounds = Math.max(2, cfg.rounds - 2);
    for (let round = 0; round < rounds; round++) {
      for (const setup of rotate(setups, round)) {
        for (const workers of [64, 512]) {
          log(`scaling round ${round + 1}/${rounds}: ${setup.key}, ${workers} workers`);
          const opsPerS = await throughputFromProcesses(setup.nodes, {}, setup.processes, workers, cfg.tpMs, `${round}:${workers}`);
          const key = `${setup.key}:${workers}`;
          results.set(key, [...(results.get(key) ?? []), opsPerS]);
        }
      }
    }
    const at = (key: string, workers: number): number => median(results.get(`${key}:${workers}`)!);
    printTable(
      `Throughput with shards (acquire+release, distinct keys, TTL 10 s; load from 1 or 4 client processes; ${cpus().length} cores shared by clients and servers; medians of ${rounds} rounds)`,
      setups.map((s) => {
        const baseline = `single node, ${s.processes} proc`;
        return {
          topology: s.name,
          'client processes': String(s.processes),
          '64 workers ops/s': at(s.key, 64),
          'vs single (64)': ratio(at(s.key, 64), at(baseline, 64)),
          '512 workers ops/s': at(s.key, 512),
          'vs single (512)': ratio(at(s.key, 512), at(baseline, 512)),
        };
      }),
    );
  } finally {
    await Promise.all([single.stop(), one.stop(), three.stop()]);
  }
}

/** 1M distinct locks held at once, on a single node and on a 3-shard cluster. */
async function many(): Promise<void> {
  log(`many: ${cfg.many.toLocaleString('en-US')} distinct locks, batches of ${MANY_BATCH.toLocaleString('en-US')}`);
  const single = await RedisServer.start();
  const three = await RedisClusterMode.start({ masters: 3, replicas: 0 });
  try {
    const rows = [];
    for (const [name, nodes, masters] of [
      ['single node', [single.url], [single.url]],
      ['3-shard cluster', [{ cluster: three.urls }], three.urls],
    ] as const) {
      log(`many: ${name}`);
      const r = await manyLocks([...nodes], masters, cfg.many, MANY_BATCH, (m) => log(`many: ${name}: ${m}`));
      rows.push({
        topology: name,
        'locks held': r.heldKeys,
        'acquire /s': r.acquirePerS,
        'release /s': r.releasePerS,
        'server MiB': r.serverMiB,
        'server B/lock': r.serverBytesPerLock,
        'client heap MiB': r.clientMiB,
        'client B/lock': r.clientBytesPerLock,
      });
    }
    printTable(
      `${cfg.many.toLocaleString('en-US')} distinct locks held at once (acquired ${MANY_BATCH.toLocaleString('en-US')} at a time, TTL 15 min, one client process; server: INFO used_memory summed over the masters; client: heapUsed after GC)`,
      rows,
    );
  } finally {
    await Promise.all([single.stop(), three.stop()]);
  }
}

async function main(): Promise<void> {
  if (run('--scaling')) await scaling();
  if (run('--sync')) await replicaSyncCost();
  if (run('--many')) await many();
}

/** What replicaSync costs: a master with a replica and a 3-shard cluster with replicas, with and without it. */
async function replicaSyncCost(): Promise<void> {
  log('sync: starting one single node, one master with a replica, and a 3-shard cluster (3 masters + 3 replicas)');
  const single = await RedisServer.start();
  const primary = await RedisServer.start();
  const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const cluster = await RedisClusterMode.start();
  try {
    await waitReplicaUp(primary);
    const setups: Setup[] = [
      { name: 'single node', nodes: [single.url], options: quiet },
      { name: 'master + replica', nodes: [primary.url], options: quiet },
      { name: 'master + replica, replicaSync', nodes: [primary.url], options: synced },
      { name: '3-shard cluster', nodes: [{ cluster: cluster.urls }], options: quiet },
      { name: '3-shard cluster, replicaSync', nodes: [{ cluster: cluster.urls }], options: synced },
    ];
    const redlocks = new Map(setups.map((s) => [s.name, new Redlock(s.nodes, s.options)]));
    const tp64 = new Map<string, number[]>();
    const tp512 = new Map<string, number[]>();
    const lat = new Map<string, number[]>();
    for (let round = 0; round < cfg.rounds; round++) {
      for (const setup of rotate(setups, round)) {
        log(`round ${round + 1}/${cfg.rounds}: ${setup.name}`);
        const redlock = redlocks.get(setup.name)!;
        if (round === 0) await latency(redlock, 50, `${setup.name}:warm`);
        lat.set(setup.name, [...(lat.get(setup.name) ?? []), await latency(redlock, cfg.latencyOps, setup.name)]);
        tp64.set(setup.name, [...(tp64.get(setup.name) ?? []), await throughput(redlock, 64, cfg.tpMs, `${setup.name}:64:${round}`)]);
        tp512.set(setup.name, [...(tp512.get(setup.name) ?? []), await throughput(redlock, 512, cfg.tpMs, `${setup.name}:512:${round}`)]);
      }
    }
    await Promise.all([...redlocks.values()].map((r) => r.close()));
    const base = (m: Map<string, number[]>, name: string): number => median(m.get(name)!);
    const rows = setups.map((s) => ({
      topology: s.name,
      'p50 µs': base(lat, s.name),
      '64-worker ops/s': base(tp64, s.name),
      'vs single (64)': ratio(base(tp64, s.name), base(tp64, 'single node')),
      '512-worker ops/s': base(tp512, s.name),
      'vs single (512)': ratio(base(tp512, s.name), base(tp512, 'single node')),
    }));
    printTable(
      `replicaSync cost (acquire+release, TTL 10 s, distinct keys; one client process; ${cpus().length} cores shared by client and servers; medians of ${cfg.rounds} rounds)`,
      rows,
    );
    const cost = (withSync: string, without: string): string =>
      `throughput ×${ratio(base(tp64, withSync), base(tp64, without))} (64 workers), ×${ratio(base(tp512, withSync), base(tp512, without))} (512), ` +
      `p50 latency ×${ratio(base(lat, withSync), base(lat, without))}`;
    console.log(`  replicaSync on a master + replica: ${cost('master + replica, replicaSync', 'master + replica')}`);
    console.log(`  replicaSync on the cluster:        ${cost('3-shard cluster, replicaSync', '3-shard cluster')}\n`);
  } finally {
    await Promise.all([single.stop(), primary.stop(), replica.stop(), cluster.stop()]);
  }
}

/** The replica of `primary` finished its first sync (WAIT would otherwise count 0 replicas). */
async function waitReplicaUp(primary: RedisServer): Promise<void> {
  const probe = new Redlock([primary.url], synced);
  try {
    for (let i = 0; i < 200; i++) {
      try {
        const lock = await probe.acquire(`probe:${i}`, TTL, { retry: false });
        await lock.release();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new Error('the replica never acknowledged a write');
  } finally {
    await probe.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
