import type { ReplicaSyncOptions } from '../nodes/replica-sync.js';

/**
 * How an acquisition retries while the resource is held by someone else.
 * Delays always carry random jitter so waiters never phase-lock with the holder.
 */
export interface RetryOptions {
  /** Retries after the first attempt. `Infinity` retries until `timeoutMs` or the signal. Default 20. */
  readonly retries?: number;
  /** Base delay between attempts in ms. Default 100. */
  readonly delayMs?: number;
  /** Up to this many ms of random jitter added to each delay. Default 100. */
  readonly jitterMs?: number;
}

/** Options of one acquisition (`acquire`, `tryAcquire`, `using`). */
export interface AcquireOptions {
  /** Retry policy, or `false` for exactly one attempt. Defaults to the Redlock's `retry`. */
  readonly retry?: RetryOptions | false;
  /** Aborts the wait (not a held lock). The acquisition rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * A deadline in ms (overall, across retries): the acquisition keeps waiting until then
   * (woken by a release notice, or by the fallback poll, which never fires after it) and
   * makes a last attempt at the deadline before giving up.
   */
  readonly timeoutMs?: number;
  /** Obtain a fencing token (`lock.fencingToken`). Costs at most one extra round trip. */
  readonly fencing?: boolean;
  /**
   * A read-write lock instead of a plain one: `'read'` is shared with other readers, `'write'`
   * excludes readers and writers, and a waiting writer keeps new readers out. A plain lock on
   * the same resource excludes both (it is a write lock without writer preference). A read
   * lock's `fencingToken` (with `fencing: true`) is the last write lock's token. See docs/primitives.md.
   */
  readonly mode?: 'read' | 'write';
  /**
   * A semaphore permit instead of a lock: at most `permits` holders of the resource at once
   * (a whole number from 1 to 1024; holders of one semaphore should agree on it). Separate
   * from locks of the same name. See docs/primitives.md.
   */
  readonly permits?: number;
  /**
   * Wait in a FIFO queue kept on the nodes: the lock goes to waiters in order of arrival,
   * across processes, and a release wakes only the next one (see docs/fair-lock.md).
   * One resource per fair acquisition. Default: the Redlock's `fair` (false).
   */
  readonly fair?: boolean;
}

/** Options of `using()`: an acquisition plus the watchdog that keeps the lock alive. */
export interface UsingOptions extends AcquireOptions {
  /**
   * Stop extending after the lock has been held this long, so a stuck holder cannot
   * keep the lock forever. The lock then expires and `lock.signal` aborts.
   * Default: the Redlock's `maxHoldMs` (unbounded when not set).
   */
  readonly maxHoldMs?: number;
}

/**
 * Options of a `Redlock` instance. Every default lives in `DEFAULT_REDLOCK_OPTIONS` (listed in
 * docs/reference.md); every rule (one validator per option, shared with the NestJS layer) lives
 * in options/: option-checks.ts per option, built from value-checks.ts, and combined per call
 * (acquire-option-checks.ts) and per Redlock (redlock-option-checks.ts).
 */
export interface RedlockOptions {
  /** Prefix of every key the library writes. Separate tenants with separate prefixes. Default `'redlock:'`. */
  readonly keyPrefix?: string;
  /**
   * Clock drift allowance as a fraction of the TTL. Default 0.01: the value redlock-rb
   * and the Redis distributed-lock page use (not derived from any clock spec).
   */
  readonly driftFactor?: number;
  /** Constant drift allowance in ms, added to `ttl × driftFactor`. Default 2 (from redlock-rb). */
  readonly driftConstantMs?: number;
  /**
   * The longest a single node may take to answer a lock command before it counts as
   * "timed out" (and, for acquire, as "maybe held", so it is released). The effective
   * timeout is also capped at a third of the TTL. Measured from when the command is
   * written to the node (the first connect and this process's own backlog do not count), or
   * from the node's last reply if later: a node still answering earlier commands is not silent,
   * so over a slow link an attempt may last longer; its validity still counts from the write.
   * Default 500.
   */
  readonly nodeTimeoutMs?: number;
  /** Default retry policy of `acquire` and `using`. */
  readonly retry?: RetryOptions | false;
  /** Default cap on how long `using()` keeps extending a lock. Default: unbounded. */
  readonly maxHoldMs?: number;
  /**
   * Before the first lock operation, check that the nodes are independent masters
   * (`checkIndependence()`), and fail every operation with `NodeIndependenceError` if not.
   * Default false.
   */
  readonly checkIndependence?: boolean;
  /**
   * The restart rule of the Redis distributed-locks page, enforced by the client: a node
   * that restarted without durable persistence does not count toward a quorum (and its
   * fencing counters are not trusted) until the largest TTL in use has passed since the
   * restart. `false` turns it off. Default on.
   *
   * A node this instance sees for the first time cannot show whether it restarted, only how
   * long ago its server started:
   * - `maxTtlMs`: the largest TTL any client of these nodes uses. Strict: a node first seen
   *   younger than it sits out until it is that old, even when every node is young (a fresh
   *   deployment then waits one `maxTtlMs`).
   * - `declaredTtlMs`: the largest TTL this process's code declares (the Nest module sets it
   *   from its `ttl` and decorators; also `declareTtl()`). A node first seen younger than it
   *   sits out only while another node was already older than it when first seen (a majority
   *   restarted under a survivor that may hold a lock). When every node is young, they count:
   *   a fresh deployment is not held back, and a restart of the whole set is not caught.
   * Either way a restart seen while running (a changed run_id) keeps the node out for the
   * largest of both and of the TTLs this instance has used. Default: neither (first sight
   * never keeps a node out).
   */
  readonly restartRule?: false | RestartRuleOption;
  /**
   * Count a node's grant only once `WAIT replicas timeoutMs` confirms that many replicas have
   * it, so a lock survives the failover of a master (Sentinel, Redis Cluster, or a plain master
   * with replicas) to a replica that acknowledged it. Costs one more round trip per granted
   * write. See docs/topologies.md. Default: off.
   */
  readonly replicaSync?: ReplicaSyncOptions;
  /**
   * Emit OpenTelemetry spans through `@opentelemetry/api` when it is installed and an SDK
   * records. Default true; `false` turns spans off for this instance (events stay).
   */
  readonly tracing?: boolean;
  /**
   * Receives warnings (for example, a client passed in whose options make failover slow).
   * Default: `console.warn`. Pass `() => {}` to silence. Never receives tokens or passwords.
   */
  readonly onWarning?: (message: string) => void;
  /** Default of every acquisition's `fair` option. Default false. */
  readonly fair?: boolean;
  /**
   * How long a fair waiter keeps its place after its process stopped (died, paused, cut
   * off): its process refreshes a liveness key every third of this. Default 2000.
   */
  readonly fairWaiterTtlMs?: number;
  /**
   * Lock cohorting: a release of a plain lock for which another acquisition of this instance
   * waits (same keys) hands the lock to that waiter locally. The keys stay on the nodes under
   * the same owner token, so the hand-off costs no Redis command (a fenced waiter pays one
   * fencing round for its fresh token). Bounded, so other processes get their turn (see
   * docs/cohorting.md). `false` turns it off. Default on: `{ maxHandoffs: 16, maxHoldMs: 100 }`.
   */
  readonly cohort?: false | CohortOptions;
}

/** The `restartRule` option (see {@link RedlockOptions.restartRule}). */
export interface RestartRuleOption {
  /** The largest TTL any client of these nodes uses: strict at first sight. */
  readonly maxTtlMs?: number;
  /** The largest TTL this process declares: a young node sits out only beside an older one. */
  readonly declaredTtlMs?: number;
}

/** Bounds of lock cohorting: after either, a release goes to the nodes if other processes wait. */
export interface CohortOptions {
  /** Consecutive local hand-offs before the lock goes back to the nodes. Default 16. */
  readonly maxHandoffs?: number;
  /** Longest a run of local hand-offs keeps the lock, counted from when it was won on the nodes. Default 100. */
  readonly maxHoldMs?: number;
}

/** Cohorting bounds with every field present. */
export interface ResolvedCohort {
  readonly maxHandoffs: number;
  readonly maxHoldMs: number;
}

/** A policy with every field present. */
export interface ResolvedRetry {
  readonly retries: number;
  readonly delayMs: number;
  readonly jitterMs: number;
}

/** Redlock options after defaults were merged (the one place defaults live). */
export interface ResolvedRedlockOptions {
  readonly keyPrefix: string;
  readonly driftFactor: number;
  readonly driftConstantMs: number;
  readonly nodeTimeoutMs: number;
  readonly retry: ResolvedRetry | false;
  readonly maxHoldMs: number;
  readonly checkIndependence: boolean;
  readonly restartRule: false | { readonly maxTtlMs: number; readonly declaredTtlMs: number };
  readonly tracing: boolean;
  readonly onWarning: (message: string) => void;
  readonly fair: boolean;
  readonly fairWaiterTtlMs: number;
  readonly cohort: ResolvedCohort | false;
}

/** The single source of default values. */
export const DEFAULT_RETRY: ResolvedRetry = Object.freeze({ retries: 20, delayMs: 100, jitterMs: 100 });

/**
 * Default cohorting bounds: 16 hand-offs amortise one release and one acquisition over 17
 * critical sections; 100 ms caps how long other processes wait behind a cohort whose
 * sections are slow (measured in bench/, 4 processes × 4 workers: see docs/cohorting.md).
 */
export const DEFAULT_COHORT: ResolvedCohort = Object.freeze({ maxHandoffs: 16, maxHoldMs: 100 });

/** The single source of default values for `RedlockOptions`. */
export const DEFAULT_REDLOCK_OPTIONS: ResolvedRedlockOptions = Object.freeze({
  keyPrefix: 'redlock:',
  driftFactor: 0.01,
  driftConstantMs: 2,
  nodeTimeoutMs: 500,
  retry: DEFAULT_RETRY,
  maxHoldMs: Infinity,
  checkIndependence: false,
  restartRule: Object.freeze({ maxTtlMs: 0, declaredTtlMs: 0 }),
  tracing: true,
  onWarning: (message: string) => console.warn(`[redlock] ${message}`),
  fair: false,
  fairWaiterTtlMs: 2_000,
  cohort: DEFAULT_COHORT,
});

/** Largest TTL accepted: 2^31-1 ms, the largest delay a Node.js timer can wait. */
export const MAX_TTL_MS = 2_147_483_647;
/** Longest resource name accepted, in UTF-16 code units. Hash longer identifiers first. */
export const MAX_RESOURCE_LENGTH = 4096;

/** Most permits of a semaphore: each acquisition reads every slot key on every node. */
export const MAX_PERMITS = 1024;
