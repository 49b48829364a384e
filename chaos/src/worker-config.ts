/** What the orchestrator tells a worker process (passed as JSON in an environment variable). */
export interface WorkerConfig {
  readonly id: number;
  /** The lock nodes' URLs; with `cluster`, the startup nodes of the one lock node, a Redis Cluster. */
  readonly lockUrls: readonly string[];
  readonly cluster: boolean;
  /** With `cluster`: `replicaSync: { replicas: 1 }`. */
  readonly replicaSync: boolean;
  /** `lockUrls` are etcd members' client URLs: the worker locks through `EtcdLocks`. */
  readonly etcd: boolean;
  readonly storeUrl: string;
  /** Resources locked with fencing (fenced read-modify-write on the store). */
  readonly resources: readonly string[];
  /** Resources locked without fencing (no store access). */
  readonly plainResources: readonly string[];
  /** Share of cycles that pick a plain resource. */
  readonly plainShare: number;
  /** Resources locked fairly (FIFO queue) and with fencing; only fair cycles touch them. */
  readonly fairResources: readonly string[];
  /** Share of cycles that pick a fair resource. */
  readonly fairShare: number;
  readonly ttlMs: number;
  readonly nodeTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly watchdogEvery: number;
  /** Cycle loops at once on this worker's Redlock (same resources: local hand-offs). */
  readonly loopsPerWorker: number;
  readonly historyFile: string;
  readonly seed: number;
  /** Permits of the semaphore of the read-write/semaphore loop; 0 leaves that loop out. */
  readonly permits: number;
}

export const WORKER_CONFIG_ENV = 'REDLOCK_CHAOS_WORKER';

/** Messages from the orchestrator to a worker. */
export type ToWorker =
  | { type: 'stop' }
  | { type: 'busy'; ms: number }
  /** Overload scenarios: `size` waiters on `resource`, or `size` distinct keys (`resource`-<i>) in one tick. */
  | { type: 'storm' | 'burst'; resource: string; size: number };

/** What an overload scenario did. */
export interface ScenarioResult {
  readonly size: number;
  readonly granted: number;
  readonly [error: string]: number;
}

/** Messages from a worker to the orchestrator. */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'busy-done' }
  | { type: 'scenario-done'; result: ScenarioResult }
  /** `handoffs`: acquisitions that got their lock from another loop of the worker (lock cohorting). */
  | { type: 'done'; cycles: number; warnings: number; handoffs: number }
  | { type: 'failed'; message: string };
