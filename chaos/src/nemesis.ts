import { Redis } from 'ioredis';
import type { RedisCluster } from '../../test/harness/redis-server.js';
import { CLUSTER_FAULTS, type ClusterFaults } from './cluster-nemesis.js';
import type { ChaosConfig } from './config.js';
import { ETCD_NODE_FAULTS, type EtcdFaults } from './etcd-nemesis.js';
import type { FaultEvent } from './history.js';
import type { PlannedFault } from './schedule.js';
import type { WorkerHandle } from './worker-pool.js';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Injects the planned faults one at a time and heals each before the next, logging
 * every fault with the times it was in effect. Node faults use the test harness
 * (SIGKILL, SIGSTOP/SIGCONT, restart on the same port with its AOF); worker freezes
 * use SIGSTOP/SIGCONT on the worker or ask it for a busy loop inside its critical section.
 */
export class Nemesis {
  readonly log: FaultEvent[] = [];
  private scenarios = 0;

  constructor(
    /** The independent lock nodes; undefined in a Redis Cluster run, whose faults `clusterFaults` injects. */
    private readonly nodes: RedisCluster | undefined,
    private readonly workers: readonly WorkerHandle[],
    private readonly config: ChaosConfig,
    /** The fenced resources, whose counters a restarted node must catch up on. */
    private readonly fencedResources: readonly string[],
    private readonly clusterFaults?: ClusterFaults,
    /** An etcd run's node faults (its members are the nodes). */
    private readonly etcdFaults?: EtcdFaults,
  ) {}

  /** The independent lock nodes (node faults are planned only when there are some). */
  private get cluster(): RedisCluster {
    if (!this.nodes) throw new Error('a node fault was planned in a Redis Cluster run');
    return this.nodes;
  }

  /** Runs `plan` (times relative to `t0`, a `performance.now()` value) until done or `signal` aborts. */
  async run(plan: readonly PlannedFault[], t0: number, signal: AbortSignal): Promise<void> {
    for (const fault of plan) {
      await sleep(t0 + fault.atMs - performance.now(), signal);
      if (signal.aborted) return;
      await this.inject(fault, signal);
    }
  }

  private async inject(f: PlannedFault, signal: AbortSignal): Promise<void> {
    if (f.kind === 'rolling-restart') return this.rollingRestart(f.targets, signal);
    if (f.kind === 'waiter-storm' || f.kind === 'burst') return this.overload(f);
    if (this.etcdFaults && ETCD_NODE_FAULTS.has(f.kind)) {
      this.log.push(await this.etcdFaults.inject(f, signal));
      return;
    }
    if (CLUSTER_FAULTS.has(f.kind)) {
      if (!this.clusterFaults) throw new Error(`${f.kind} was planned in a run without a Redis Cluster`);
      this.log.push(await this.clusterFaults.inject(f, signal));
      return;
    }
    const isNodeFault = f.kind !== 'sigstop-worker' && f.kind !== 'busy-worker';
    const servers = isNodeFault ? f.targets.map((i) => this.cluster.server(i)) : [];
    let start: number;
    switch (f.kind) {
      case 'kill-minority':
      case 'kill-majority': {
        await Promise.all(servers.map((s) => s.kill()));
        start = Date.now();
        await sleep(f.durationMs, signal);
        // When each node began answering, by its own log: our reading of that line comes later (a
        // loaded machine), and a lock granted in between would look granted while a majority was down.
        const back = servers.map((s) => s.restart().then(() => s.readyAt ?? Date.now()));
        // A majority is back with the first of its killed nodes (⌊N/2⌋+1 were killed): the
        // window ends there, or a lock granted while the second one still starts looks illegal.
        const firstBack = Math.min(...(await Promise.all(back)));
        if (f.kind === 'kill-majority') {
          this.log.push({ type: 'fault', kind: f.kind, targets: f.targets, start, end: firstBack });
          return;
        }
        break;
      }
      case 'pause-minority':
      case 'pause-majority':
        start = Date.now();
        for (const s of servers) s.pause();
        await sleep(f.durationMs, signal);
        for (const s of servers) s.resume();
        break;
      case 'restart-node':
        start = Date.now();
        await Promise.all(servers.map((s) => s.restart()));
        break;
      case 'sigstop-worker': {
        const worker = this.workers[f.targets[0]!]!;
        start = Date.now();
        worker.signal('SIGSTOP');
        await sleep(f.durationMs, signal);
        worker.signal('SIGCONT');
        break;
      }
      case 'busy-worker':
        // The worker logs this fault itself, with the exact times of its busy loop.
        await this.workers[f.targets[0]!]!.busy(f.durationMs);
        return;
      default:
        throw new Error(`no injection for fault ${f.kind}`);
    }
    this.log.push({ type: 'fault', kind: f.kind, targets: f.targets, start, end: Date.now() });
  }

  /**
   * Restarts the nodes one at a time, each EMPTY (its AOF wiped), as docs/fencing.md's
   * rolling restart without persistence: down longer than the TTL, then back and paused
   * past the node timeout (it answers after the rounds resolved), then resumed; the next
   * node goes down only once this one holds every fencing counter the others hold (bounded:
   * a node that did not catch up is reported in the step's detail, and the roll goes on).
   * One fault event per step, so the timeline shows exactly one node down at a time.
   */
  private async rollingRestart(nodes: readonly number[], signal: AbortSignal): Promise<void> {
    const c = this.config;
    for (const k of nodes) {
      if (signal.aborted) return;
      const server = this.cluster.server(k);
      await server.kill();
      const start = Date.now();
      await sleep(c.rollDownMs, signal);
      server.wipe();
      await server.restart();
      // Paused only once the workers reconnected: its grants then come after the rounds resolved.
      await this.reconnected(k, signal);
      server.pause();
      await sleep(c.rollSlowMs, signal);
      server.resume();
      const caughtUp = await this.caughtUp(k, c.rollCatchUpBoundMs, signal);
      this.log.push({ type: 'fault', kind: 'rolling-restart', targets: [k], start, end: Date.now(), detail: { caughtUp } });
    }
  }

  /** Polls (bounded) until every worker's Redlock is connected to node `k` again. */
  private async reconnected(k: number, signal: AbortSignal): Promise<void> {
    const admin = new Redis(this.cluster.server(k).url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await admin.connect();
      const give = performance.now() + 5_000;
      while (!signal.aborted && performance.now() < give) {
        const list = String(await admin.call('CLIENT', 'LIST'));
        // Each worker's Redlock: one command connection per node (its own admin line excluded).
        if (list.split('\n').filter((l) => l.includes(' cmd=') && !l.includes('cmd=client')).length >= this.workers.length) return;
        await sleep(20, signal);
      }
    } finally {
      admin.disconnect();
    }
  }

  /**
   * Polls until node `k` holds, for every fenced resource, a counter ≥ the highest one the
   * other nodes held just before (the check docs/fencing.md asks for between restarts).
   */
  private async caughtUp(k: number, boundMs: number, signal: AbortSignal): Promise<boolean> {
    const clients = this.cluster.servers.map(
      (s) => new Redis(s.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false }),
    );
    const keys = this.fencedResources.map((r) => `redlock:fence:${r}`);
    const read = async (i: number): Promise<bigint[]> => {
      const values = await clients[i]!.mget(...keys);
      return values.map((v) => BigInt(v ?? '0'));
    };
    try {
      await Promise.all(clients.map((client) => client.connect()));
      const give = performance.now() + boundMs;
      while (!signal.aborted && performance.now() < give) {
        const others = await Promise.all(clients.map((_, i) => (i === k ? Promise.resolve([]) : read(i))));
        const mine = await read(k);
        const behind = keys.some((_, r) => others.some((o, i) => i !== k && o[r]! > mine[r]!));
        if (!behind) return true;
        await sleep(50, signal);
      }
      return false;
    } finally {
      for (const client of clients) client.disconnect();
    }
  }

  /** Asks a worker for a waiter storm or a burst (nodes healthy) and logs what it did. */
  private async overload(f: PlannedFault): Promise<void> {
    const worker = this.workers[f.targets[0]!]!;
    const n = this.scenarios++;
    const storm = f.kind === 'waiter-storm';
    const size = storm ? this.config.stormWaiters : this.config.burstSize;
    const start = Date.now();
    const bound = Math.max(30_000, size * 60);
    const result = await worker.scenario(storm ? 'storm' : 'burst', storm ? `storm-${n}` : `burst-${n}`, size, bound);
    const detail = result ?? { size, unfinishedAfterMs: bound };
    this.log.push({ type: 'fault', kind: f.kind, targets: f.targets, start, end: Date.now(), detail: { ...detail } });
  }
}
