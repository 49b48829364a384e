/**
 * `npm run bench:cluster [-- --quick]`: lock throughput on one 3-shard Redis Cluster
 * (3 masters + 3 replicas) against one single node, at 64 and 512 workers, and what
 * `replicaSync` costs (on the cluster, and on a plain master with one replica). Every
 * configuration runs in the same process and run, rounds interleaved (the order rotates);
 * the result is the ratios within this run, not the absolute figures.
 */
import { cpus } from 'node:os';
import { Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { RedisClusterMode, RedisServer } from '@redlock-nest/redis-process';
import { median, percentile, rotate } from './stats.js';
import { printTable, ratio } from './table.js';

const quick = process.argv.includes('--quick');
const cfg = quick ? { rounds: 2, tpMs: 800, latencyOps: 300 } : { rounds: 5, tpMs: 2_000, latencyOps: 2_000 };
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

async function main(): Promise<void> {
  log('starting one single node, one master with a replica, and a 3-shard cluster (3 masters + 3 replicas)');
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
      `Cluster scaling and replicaSync cost (acquire+release, TTL 10 s, distinct keys; ${cpus().length} cores shared by client and servers; medians of ${cfg.rounds} rounds)`,
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
