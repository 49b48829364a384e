/** The knobs of a chaos run, and the two presets: the default run and the short CI run. */
export interface ChaosConfig {
  /** How long the workers run lock cycles (ms). */
  readonly durationMs: number;
  readonly workers: number;
  /** Independent Redis lock nodes (odd). */
  readonly nodes: number;
  /** Hot resources all workers contend for, locked with fencing (`hot-<i>`). */
  readonly resources: number;
  /**
   * Resources locked without fencing (`plain-<i>`): a single-resource unfenced acquire
   * takes the library's SET NX path instead of the Lua script, so it needs its own traffic.
   */
  readonly plainResources: number;
  /** Share of cycles (0..1) that lock a plain resource instead of a fenced one. */
  readonly plainShare: number;
  /**
   * Resources locked with `fair: true` and fencing (`fair-<i>`), by fair cycles only (a non-fair
   * acquisition may overtake a queue), so the checker can hold their grants to queue order.
   */
  readonly fairResources: number;
  /** Share of cycles (0..1) that lock a fair resource. */
  readonly fairShare: number;
  /** Lock TTL (ms). Long enough that a loaded machine does not stall a holder past it; freezes exceed it. */
  readonly ttlMs: number;
  /** Per-node command timeout of the workers' Redlocks (ms). */
  readonly nodeTimeoutMs: number;
  /** An acquire call gives up after this long (ms): nothing waits forever. */
  readonly acquireTimeoutMs: number;
  /** Every n-th cycle of a worker uses using() and holds past a watchdog extension. */
  readonly watchdogEvery: number;
  /**
   * Cycle loops each worker process runs at once on its one Redlock: with more than one, two
   * loops of a process often want the same resource, so releases hand off locally (cohorting).
   */
  readonly loopsPerWorker: number;
  /** Quiet time between two faults (ms). */
  readonly faultGapMs: number;
  /** How long a minority / majority stays down or paused (ms). */
  readonly minorityDownMs: number;
  readonly majorityDownMs: number;
  /**
   * Rolling restart, one node at a time: how long each node stays down before it comes back
   * EMPTY (longer than the TTL: the Redis distributed-locks page's delayed restart, so no lock
   * it granted is still valid), and how long it is then paused (longer than `nodeTimeoutMs`,
   * so it answers after the rounds resolved: the slow node answering last).
   */
  readonly rollDownMs: number;
  readonly rollSlowMs: number;
  /** Bound on waiting for a restarted node to catch up on every fencing counter before the next restart. */
  readonly rollCatchUpBoundMs: number;
  /** Waiters of one waiter storm (many waiters on one key in one worker); 0 leaves the scenario out. */
  readonly stormWaiters: number;
  /** Acquisitions of distinct keys issued in one tick by one burst; 0 leaves the scenario out. */
  readonly burstSize: number;
  /** Seed of the nemesis' choices, so a failing schedule can be replayed. */
  readonly seed: number;
  /**
   * Each worker also runs read-write lock and semaphore holds (`rw-0`, `sem-0`) with this many
   * permits; 0 leaves them out.
   */
  readonly semaphorePermits: number;
  /**
   * The one lock node is a Redis Cluster (3 masters + 3 replicas), and the nemesis kills, pauses and
   * fails over its masters (see CLUSTER_ROTATION in schedule.ts). Read-write locks, semaphores and
   * fair locks run there too, their keys tagged with their resource's slot.
   */
  readonly cluster: boolean;
  /** With `cluster`: the workers' Redlocks use `replicaSync: { replicas: 1 }` (grants survive a failover). */
  readonly replicaSync: boolean;
  /** With `cluster`: its `cluster-node-timeout` (ms), how long a master may be unreachable before its replica takes over. */
  readonly clusterNodeTimeoutMs: number;
  /**
   * The locks are on an etcd cluster of `nodes` members (`EtcdLocks`), and the nemesis kills and
   * pauses its leader, restarts members and takes the majority down (see ETCD_ROTATION in
   * schedule.ts). `nodeTimeoutMs` is then the engine's `requestTimeoutMs`.
   */
  readonly etcd: boolean;
}

export const DEFAULT_CONFIG: ChaosConfig = {
  durationMs: 150_000,
  workers: 4,
  nodes: 5,
  resources: 4,
  plainResources: 2,
  plainShare: 0.4,
  fairResources: 1,
  fairShare: 0.2,
  ttlMs: 1_000,
  nodeTimeoutMs: 200,
  acquireTimeoutMs: 3_000,
  watchdogEvery: 100,
  loopsPerWorker: 3,
  faultGapMs: 3_000,
  minorityDownMs: 2_000,
  majorityDownMs: 3_000,
  rollDownMs: 1_500,
  rollSlowMs: 500,
  rollCatchUpBoundMs: 5_000,
  stormWaiters: 300,
  burstSize: 2_000,
  seed: 1,
  semaphorePermits: 2,
  cluster: false,
  replicaSync: false,
  clusterNodeTimeoutMs: 1_000,
  etcd: false,
};

/** The CI run: every fault kind once (the majority loss included), in about 30 s of workload. */
export const SHORT_CONFIG: ChaosConfig = {
  ...DEFAULT_CONFIG,
  durationMs: 30_000,
  nodes: 3,
  resources: 3,
  watchdogEvery: 40,
  faultGapMs: 500,
  minorityDownMs: 1_000,
  majorityDownMs: 1_500,
  rollDownMs: 1_200,
  rollSlowMs: 400,
  stormWaiters: 100,
  burstSize: 500,
};

/**
 * `config` as a Redis Cluster run: one lock node (the cluster), `replicaSync` unless `unsynced`, the
 * same primitives as a plain run (read-write, semaphore and fair holds), and a longer gap between
 * faults (a failover and the old master's resync take seconds).
 */
export function clusterRun(config: ChaosConfig, unsynced: boolean): ChaosConfig {
  return {
    ...config,
    cluster: true,
    replicaSync: !unsynced,
    nodes: 1,
    faultGapMs: Math.max(config.faultGapMs, 2_000),
  };
}

/**
 * `config` as an etcd run: 3 members (or the odd count given), no fair resources (etcd's queue is
 * FIFO for every lock, and there is no `fair` ticket to check), a request timeout of 1 s (a raft
 * write is an fsync on a shared machine), a TTL of 2 s (etcd counts leases in whole seconds) and
 * overload scenarios sized for about 200 raft writes a second instead of thousands of commands.
 */
export function etcdRun(config: ChaosConfig): ChaosConfig {
  return {
    ...config,
    etcd: true,
    nodes: 3,
    fairResources: 0,
    fairShare: 0,
    ttlMs: 2_000,
    nodeTimeoutMs: 1_000,
    acquireTimeoutMs: 5_000,
    stormWaiters: Math.min(config.stormWaiters, 50),
    burstSize: Math.min(config.burstSize, 100),
    faultGapMs: Math.max(config.faultGapMs, 1_500),
  };
}

/** A small deterministic PRNG (mulberry32): the schedule must be replayable from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
