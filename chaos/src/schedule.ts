import { seededRandom, type ChaosConfig } from './config.js';
import type { FaultKind } from './history.js';

/** One planned fault: when (ms after the workload starts), what, on which targets, for how long. */
export interface PlannedFault {
  readonly atMs: number;
  readonly kind: FaultKind;
  /** Lock node indexes, or worker ids for worker freezes. */
  readonly targets: readonly number[];
  readonly durationMs: number;
}

/** The rotation of single faults; each majority loss is inserted once (killed near 40 %, paused near 70 % of the run). */
const ROTATION: readonly FaultKind[] = [
  'kill-minority',
  'sigstop-worker',
  'rolling-restart',
  'pause-minority',
  'waiter-storm',
  'busy-worker',
  'restart-node',
  'burst',
];

/**
 * The rotation of a Redis Cluster run (`--cluster`): the cluster's own faults, the worker
 * freezes (fencing's case) and the overload scenarios. No majority loss: there is one lock node.
 */
const CLUSTER_ROTATION: readonly FaultKind[] = [
  'kill-master',
  'sigstop-worker',
  'pause-master',
  'waiter-storm',
  'failover-master',
  'busy-worker',
  'burst',
];

/**
 * The rotation of an etcd run (`--etcd`): the leader killed and paused (an election each), a
 * member restarted, a follower or the leader killed at random (`kill-minority`), the worker
 * freezes and the overload scenarios; both majority losses are inserted as in a plain run. No
 * rolling restart: an etcd member restarted empty must be removed and re-added to the cluster.
 */
const ETCD_ROTATION: readonly FaultKind[] = [
  'kill-leader',
  'sigstop-worker',
  'pause-leader',
  'waiter-storm',
  'restart-node',
  'busy-worker',
  'kill-minority',
  'burst',
];

/** Planned length of a cluster fault beyond its own timeout: the election, the old master's restart and resync. */
const CLUSTER_RECOVERY_ESTIMATE_MS = 4_000;

/** A rolling restart's planned length per node: down, slow, and about a second to reconnect and catch up. */
const ROLL_CATCH_UP_ESTIMATE_MS = 1_000;

function pick(random: () => number, from: number, count: number): number[] {
  const all = Array.from({ length: from }, (_, i) => i);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.slice(0, count).sort((a, b) => a - b);
}

function durationOf(kind: FaultKind, c: ChaosConfig): number {
  switch (kind) {
    case 'kill-minority':
    case 'pause-minority':
    case 'kill-leader':
    case 'pause-leader':
      return c.minorityDownMs;
    case 'kill-majority':
    case 'pause-majority':
      return c.majorityDownMs;
    // Frozen well past the TTL, so the lock surely expires and others take it meanwhile.
    case 'sigstop-worker':
      return c.ttlMs + 1_000;
    case 'busy-worker':
      return c.ttlMs + 500;
    case 'restart-node':
      return 0;
    case 'kill-master':
      return c.clusterNodeTimeoutMs + CLUSTER_RECOVERY_ESTIMATE_MS;
    // Paused past the node timeout: failed over while paused.
    case 'pause-master':
      return c.clusterNodeTimeoutMs * 2 + CLUSTER_RECOVERY_ESTIMATE_MS;
    case 'failover-master':
      return CLUSTER_RECOVERY_ESTIMATE_MS;
    case 'rolling-restart':
      return c.nodes * (c.rollDownMs + c.rollSlowMs + ROLL_CATCH_UP_ESTIMATE_MS);
    // Planned lengths only; the nemesis waits for them to finish.
    case 'waiter-storm':
      return 3_000;
    case 'burst':
      return 2_000;
  }
}

/**
 * Faults one at a time, separated by quiet gaps, from 1 s after the start until 2 s
 * before the end (so the final state is read from a healthy system). A minority is
 * ⌊(N-1)/2⌋ nodes; the majority loss takes down ⌊N/2⌋+1. A cluster fault targets node 0 (the
 * cluster); the nemesis picks the master when it injects it.
 */
export function planFaults(c: ChaosConfig): PlannedFault[] {
  const random = seededRandom(c.seed);
  const minority = Math.max(1, Math.floor((c.nodes - 1) / 2));
  const majority = Math.floor(c.nodes / 2) + 1;
  const end = c.durationMs - 2_000;
  const plan: PlannedFault[] = [];
  let at = 1_000;
  const majorities: Array<{ kind: FaultKind; from: number }> = c.cluster
    ? []
    : [
        { kind: 'kill-majority', from: end * 0.4 },
        { kind: 'pause-majority', from: end * 0.7 },
      ];
  const rotation = (c.cluster ? CLUSTER_ROTATION : c.etcd ? ETCD_ROTATION : ROTATION).filter(
    (k) => (k !== 'waiter-storm' || c.stormWaiters > 0) && (k !== 'burst' || c.burstSize > 0),
  );
  for (let i = 0; ; i++) {
    let kind = rotation[i % rotation.length]!;
    if (majorities.length > 0 && at >= majorities[0]!.from) {
      kind = majorities.shift()!.kind;
      i--;
    }
    const durationMs = durationOf(kind, c);
    if (at + durationMs > end) break;
    const targets =
      kind === 'sigstop-worker' || kind === 'busy-worker' || kind === 'waiter-storm' || kind === 'burst'
        ? pick(random, c.workers, 1)
        : kind === 'kill-majority' || kind === 'pause-majority'
          ? pick(random, c.nodes, majority)
          : kind === 'rolling-restart'
            ? Array.from({ length: c.nodes }, (_, n) => n)
            : pick(random, c.nodes, kind === 'restart-node' ? 1 : minority);
    plan.push({ atMs: at, kind, targets, durationMs });
    at += durationMs + c.faultGapMs;
  }
  return plan;
}
