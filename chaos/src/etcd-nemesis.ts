/**
 * The node faults of an etcd run (`npm run chaos -- --etcd`): the lock service is an etcd
 * cluster (`EtcdLocks` in every worker) and its members are the nodes the faults target.
 *
 * - `kill-leader`: the member that leads when the fault starts is SIGKILLed; the others elect a
 *   new leader within an election timeout; the old one is restarted with its data and rejoins as
 *   a follower.
 * - `pause-leader`: the leader is SIGSTOPped: a new leader is elected while it is frozen; when it
 *   is resumed it still believes it leads until it hears the new term (the stalled old leader of
 *   etcd issues 15247 and 12528).
 * - `kill-minority`, `restart-node`, `kill-majority`, `pause-majority`: as on Redis, on members.
 *
 * A killed member always comes back with its data (`--initial-cluster-state existing`): a member
 * restarted empty would have to be removed and re-added, an operator's procedure, not a fault.
 */
import type { EtcdCluster, EtcdMember } from '@redlock-nest/redis-process';
import type { FaultEvent } from './history.js';
import type { PlannedFault } from './schedule.js';

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

/** How long the record of a leader fault waits for the cluster to name a leader again. */
const LEADER_BOUND_MS = 10_000;

/** Node faults an etcd run plans (the worker freezes and overload scenarios are the nemesis' own). */
export const ETCD_NODE_FAULTS: ReadonlySet<string> = new Set([
  'kill-leader',
  'pause-leader',
  'kill-minority',
  'pause-minority',
  'restart-node',
  'kill-majority',
  'pause-majority',
]);

export class EtcdFaults {
  constructor(private readonly cluster: EtcdCluster) {}

  /** Injects `f` and heals it: every member running and unpaused again. Resolves with its record. */
  async inject(f: PlannedFault, signal: AbortSignal): Promise<FaultEvent> {
    const leader = f.kind === 'kill-leader' || f.kind === 'pause-leader' ? await this.cluster.leader() : undefined;
    const members: EtcdMember[] = leader ? [leader] : f.targets.map((i) => this.cluster.members[i]!);
    const targets = members.map((m) => this.cluster.members.indexOf(m));
    let start: number;
    switch (f.kind) {
      case 'kill-leader':
      case 'kill-minority':
      case 'kill-majority':
        await Promise.all(members.map((m) => m.kill()));
        start = Date.now();
        await sleep(f.durationMs, signal);
        if (f.kind === 'kill-majority') {
          // A majority is back once the first killed member knows a leader (elected with it and the
          // survivors): the window ends there, by the member's own log, as on Redis (nemesis.ts).
          // Not when the last one is up (the second member may start seconds after the first), nor
          // when the first serves clients: that waits for its own publish through raft, which a
          // loaded machine can delay by seconds while the healthy majority already grants locks.
          const back = await Promise.all(members.map((m) => m.start('existing').then(() => m.leaderKnownAt ?? Date.now())));
          return { type: 'fault', kind: f.kind, targets, start, end: Math.min(...back) };
        }
        await Promise.all(members.map((m) => m.start('existing')));
        break;
      case 'pause-leader':
      case 'pause-minority':
      case 'pause-majority':
        start = Date.now();
        for (const m of members) m.pause();
        await sleep(f.durationMs, signal);
        for (const m of members) m.resume();
        break;
      case 'restart-node':
        start = Date.now();
        await Promise.all(members.map((m) => m.restart()));
        break;
      default:
        throw new Error(`no etcd injection for fault ${f.kind}`);
    }
    const end = Date.now();
    const detail = leader ? { leader: leader.name, after: (await this.leaderName(signal)) ?? 'none' } : undefined;
    return { type: 'fault', kind: f.kind, targets, start, end, ...(detail ? { detail } : {}) };
  }

  /** The leader once there is one again (a resumed old leader may need an election first), bounded. */
  private async leaderName(signal: AbortSignal): Promise<string | undefined> {
    const give = performance.now() + LEADER_BOUND_MS;
    while (!signal.aborted && performance.now() < give) {
      try {
        return (await this.cluster.leader()).name;
      } catch {
        await sleep(50, signal);
      }
    }
    return undefined;
  }
}
