import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisFencedStore } from '@redlock-nest/core';
import { EtcdCluster } from '@redlock-nest/redis-process';
import { RedisCluster, RedisClusterMode, RedisServer } from '../../test/harness/redis-server.js';
import { checkHistory, type ChaosReport } from './checker.js';
import { ClusterFaults } from './cluster-nemesis.js';
import type { ChaosConfig } from './config.js';
import { EtcdFaults } from './etcd-nemesis.js';
import { decodeValue, parseHistory, type FinalEvent, type HistoryEvent } from './history.js';
import { Nemesis } from './nemesis.js';
import { planFaults } from './schedule.js';
import { WorkerHandle } from './worker-pool.js';

export interface ChaosRun {
  readonly report: ChaosReport;
  readonly config: ChaosConfig;
  /** Folder with the history files and report.json. */
  readonly runDir: string;
}

/** Reads each resource's final value from the store, for the lost-write check. */
async function readFinals(storeUrl: string, resources: readonly string[]): Promise<FinalEvent[]> {
  const client = new Redis(storeUrl, { maxRetriesPerRequest: 1 });
  try {
    const store = new RedisFencedStore(client, { keyPrefix: 'chaos:' });
    const finals: FinalEvent[] = [];
    for (const resource of resources) {
      const v = decodeValue((await store.read(resource))?.value);
      finals.push({ type: 'final', resource, seq: v?.seq ?? 0, worker: v?.worker ?? null, cycle: v?.cycle ?? null });
    }
    return finals;
  } finally {
    await client.quit();
  }
}

/**
 * One chaos run: lock nodes with AOF (so a restarted node keeps its keys, as the
 * Redlock spec requires) or, with `config.cluster`, one Redis Cluster (3 masters + 3
 * replicas) as the one lock node; a separate store node, worker processes cycling on hot
 * resources, and the nemesis injecting faults. Then the history is checked.
 */
export async function runChaos(config: ChaosConfig, runDir: string, log: (line: string) => void): Promise<ChaosRun> {
  mkdirSync(runDir, { recursive: true });
  const resources = Array.from({ length: config.resources }, (_, i) => `hot-${i}`);
  // Locked without fencing; never written to the store, so they have no final value.
  const plainResources = Array.from({ length: config.plainResources }, (_, i) => `plain-${i}`);
  const fairResources = Array.from({ length: config.fairResources }, (_, i) => `fair-${i}`);
  const clusterMode = config.cluster ? await RedisClusterMode.start({ nodeTimeoutMs: config.clusterNodeTimeoutMs }) : undefined;
  const etcd = config.etcd ? await EtcdCluster.start({ members: config.nodes }) : undefined;
  const cluster = clusterMode || etcd ? undefined : await RedisCluster.start(config.nodes, { persistent: true });
  const lockUrls = clusterMode?.urls ?? etcd?.hosts ?? cluster!.urls;
  const storeServer = await RedisServer.start();
  const workers: WorkerHandle[] = [];
  const stopNemesis = new AbortController();
  try {
    for (let id = 0; id < config.workers; id++) {
      workers.push(
        new WorkerHandle({
          id,
          lockUrls,
          cluster: config.cluster,
          replicaSync: config.replicaSync,
          etcd: config.etcd,
          storeUrl: storeServer.url,
          resources,
          plainResources,
          plainShare: config.plainShare,
          fairResources,
          fairShare: config.fairShare,
          ttlMs: config.ttlMs,
          nodeTimeoutMs: config.nodeTimeoutMs,
          acquireTimeoutMs: config.acquireTimeoutMs,
          watchdogEvery: config.watchdogEvery,
          loopsPerWorker: config.loopsPerWorker,
          historyFile: join(runDir, `worker-${id}.jsonl`),
          seed: config.seed,
          permits: config.semaphorePermits,
        }),
      );
    }
    await Promise.all(workers.map((w) => w.ready()));
    const plan = planFaults(config);
    log(
      `${config.workers} workers, ${clusterMode ? `one Redis Cluster (3 masters + 3 replicas${config.replicaSync ? ', replicaSync' : ', no replicaSync'})` : etcd ? `an etcd cluster of ${config.nodes} members` : `${config.nodes} lock nodes`}, ${resources.length} hot resources (fenced), ${plainResources.length} plain (${Math.round(config.plainShare * 100)} % of cycles), ${fairResources.length} fair (${Math.round(config.fairShare * 100)} %), ${plan.length} faults over ${config.durationMs / 1000} s`,
    );

    const clusterFaults = clusterMode ? new ClusterFaults(clusterMode, config, resources) : undefined;
    const etcdFaults = etcd ? new EtcdFaults(etcd) : undefined;
    const nemesis = new Nemesis(cluster, workers, config, [...resources, ...fairResources], clusterFaults, etcdFaults);
    const t0 = performance.now();
    const faults = nemesis.run(plan, t0, stopNemesis.signal);
    await new Promise((resolve) => setTimeout(resolve, config.durationMs));
    stopNemesis.abort();
    await faults;
    const codes = await Promise.all(workers.map((w) => w.stop()));
    const failures = workers.filter((w) => w.failure).map((w) => `worker ${w.config.id}: ${w.failure}`);
    if (failures.length > 0 || codes.some((c) => c !== 0)) {
      throw new Error(`workers failed (exit codes ${codes.join(', ')}): ${failures.join('; ')}`);
    }

    log(`library warnings (nodes down, expected under faults): ${workers.reduce((n, w) => n + w.warnings, 0)}`);
    log(`local hand-offs (cohorting): ${workers.reduce((n, w) => n + w.handoffs, 0)}`);
    const events: HistoryEvent[] = [
      { type: 'setup', nodes: config.nodes },
      ...nemesis.log,
      ...(await readFinals(storeServer.url, [...resources, ...fairResources])),
    ];
    for (const w of workers) events.push(...parseHistory(readFileSync(w.config.historyFile, 'utf8')));
    writeFileSync(join(runDir, 'nemesis.jsonl'), nemesis.log.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const report = checkHistory(events);
    writeFileSync(join(runDir, 'report.json'), JSON.stringify({ config, report }, null, 2));
    return { report, config, runDir };
  } finally {
    stopNemesis.abort();
    for (const w of workers) w.kill();
    await cluster?.stop();
    await clusterMode?.stop();
    await etcd?.stop();
    await storeServer.stop();
  }
}
