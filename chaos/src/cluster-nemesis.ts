/**
 * The faults of a Redis Cluster run (`npm run chaos -- --cluster`): the one lock node is a
 * cluster of 3 masters with a replica each, and each fault targets the master serving the slot
 * of a hot resource (picked with the run's seed), so the workers' locks are in its keys.
 *
 * - `kill-master`: SIGKILL; its replica is promoted after `cluster-node-timeout`; then the old
 *   master is restarted and rejoins as a replica of the promoted one.
 * - `pause-master`: SIGSTOP for twice `cluster-node-timeout`, so it is failed over while paused,
 *   then SIGCONT: it resumes believing it is master until it hears it was demoted. A client whose
 *   slot map is old can write to it meanwhile: only `replicaSync` keeps such a grant from counting
 *   (its WAIT finds no replica).
 * - `failover-master`: `CLUSTER FAILOVER` on its replica (a manual failover, which waits for the
 *   replica to catch up first).
 *
 * Each fault ends once the cluster is healthy and the old master is a synced replica again, so
 * with `replicaSync` grants can count again; errors until then are the fault's.
 */
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import type { RedisClusterMode, RedisServer } from '../../test/harness/redis-server.js';
import type { ChaosConfig } from './config.js';
import type { FaultEvent } from './history.js';
import type { PlannedFault } from './schedule.js';

/** Faults that only a cluster run plans. */
export const CLUSTER_FAULTS: ReadonlySet<string> = new Set(['kill-master', 'pause-master', 'failover-master']);

/** How long the cluster may take to be healthy and resynced after a fault before the run fails. */
const RECOVERY_BOUND_MS = 60_000;

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

export class ClusterFaults {
  private next = 0;

  constructor(
    private readonly cluster: RedisClusterMode,
    private readonly config: ChaosConfig,
    /** Hot resources: each fault takes the master of one of them, in turn. */
    private readonly resources: readonly string[],
  ) {}

  /** Injects `f` (a kind of {@link CLUSTER_FAULTS}) and heals it; resolves with its record. */
  async inject(f: PlannedFault, signal: AbortSignal): Promise<FaultEvent> {
    const resource = this.resources[this.next++ % this.resources.length]!;
    const slot = hashSlot(`redlock:lock:${hashTag(resource)}`);
    const master = await this.cluster.masterOfSlot(slot);
    const [replica] = await this.cluster.replicasOf(master);
    let start: number;
    switch (f.kind) {
      case 'kill-master':
        await master.kill();
        start = Date.now();
        await this.until(async () => (await this.cluster.masterOfSlot(slot)) !== master, 'a replica to take over', signal);
        await master.restart();
        break;
      case 'pause-master':
        start = Date.now();
        master.pause();
        await sleep(this.config.clusterNodeTimeoutMs * 2, signal);
        master.resume();
        break;
      default:
        if (!replica) throw new Error(`the master on port ${master.port} has no replica to fail over to`);
        start = Date.now();
        await this.cluster.failover(replica);
    }
    await this.healed(master, slot);
    return {
      type: 'fault',
      kind: f.kind,
      targets: [0],
      start,
      end: Date.now(),
      detail: { resource, slot, master: master.port, promoted: (await this.cluster.masterOfSlot(slot)).port },
    };
  }

  /**
   * The cluster serves every slot again, and `old` is a replica whose link is up (or, if no failover
   * happened, still the slot's master).
   */
  private async healed(old: RedisServer, slot: number): Promise<void> {
    await this.cluster.waitHealthy(RECOVERY_BOUND_MS);
    const give = performance.now() + RECOVERY_BOUND_MS;
    const done = async (): Promise<boolean> =>
      (await this.cluster.isSyncedReplica(old)) || ((await this.cluster.isMaster(old)) && (await this.cluster.masterOfSlot(slot)) === old);
    while (!(await done().catch(() => false))) {
      if (performance.now() > give) throw new Error(`port ${old.port} did not resync as a replica within ${RECOVERY_BOUND_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private async until(check: () => Promise<boolean>, what: string, signal: AbortSignal): Promise<void> {
    const give = performance.now() + RECOVERY_BOUND_MS;
    while (!signal.aborted && !(await check().catch(() => false))) {
      if (performance.now() > give) throw new Error(`timed out waiting for ${what}`);
      await sleep(50, signal);
    }
  }
}
