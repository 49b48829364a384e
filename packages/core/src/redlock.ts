import { LockNotAcquiredError, RedlockArgumentError, RedlockClosedError } from './errors/errors.js';
import { acquireLoop, type AcquisitionHost } from './acquire/acquisition.js';
import type { LockCohorts } from './cohorts/lock-cohort.js';
import type { ContentionHints } from './rounds/arbiter-round.js';
import type { FairQueue } from './primitives/fair-queue.js';
import type { FairSession } from './primitives/fair-session.js';
import { checkNodeIndependence, type NodeReport } from './safety/independence.js';
import type { IndependenceWatch } from './safety/independence-watch.js';
import { checkValidity } from './acquire/lock-rounds.js';
import { checkNodes, type CheckNodesOptions, type NodeCheckReport } from './safety/node-check.js';
import {
  forceReleaseResource,
  inspectResource,
  type ForceReleaseResult,
  type InspectOptions,
  type LockInspection,
  type OperatorContext,
} from './operator/operator.js';
import { primitiveKeys } from './operator/operator-primitives.js';
import type { Lock, LockOperations } from './lock/lock.js';
import type { LockNode } from './nodes/lock-node.js';
import { checkDistinctNodes } from './nodes/node-input.js';
import {
  checkAcquireOptions,
  checkPermits,
  checkTtl,
  normalizeResources,
  resolveRedlockOptions,
  resolveRetry,
} from './options/option-checks.js';
import type { AcquireOptions, RedlockOptions, ResolvedRedlockOptions, UsingOptions } from './options/options.js';
import type { RedisNodeInput } from './nodes/redis-client.js';
import type { KeyNames } from './nodes/cluster-client.js';
import { primitiveFor } from './primitives/primitive-kind.js';
import type { ReleaseNotifier } from './wakeups/release-notifier.js';
import type { WakeQueue } from './scripts/wake-queue.js';
import type { AddressedWakeups } from './wakeups/addressed-wakeups.js';
import type { LockContext } from './lock/lock-context.js';
import type { RestartRule } from './safety/restart-rule.js';
import { runWithLock } from './lock/watchdog.js';
import { RedlockEmitter, type RedlockEventName } from './observability/events.js';
import { assembleRedlock } from './redlock-parts.js';
import type { LockEngine } from './engine.js';
import { listenerWarning, RedlockTelemetry } from './observability/telemetry.js';

/**
 * Redlock over N independent Redis nodes (N = 1 is the single-instance lock of the Redis
 * distributed-locks page: an efficiency lock, no fault tolerance).
 *
 * @example
 * ```ts
 * const redlock = new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']);
 * await redlock.using('order:42', 10_000, async (lock) => {
 *   await chargeOrder(42, { signal: lock.signal });
 * });
 * await redlock.close();
 * ```
 */
export class Redlock extends RedlockEmitter implements LockEngine {
  /** Nodes needed for a majority: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  /** The options in force, defaults merged. */
  readonly options: ResolvedRedlockOptions;
  /** @internal */
  readonly nodes: readonly LockNode[];
  /** @internal */ readonly active = new Set<Lock>();
  /** Attempts under way: close() lets them finish, so a lock they win is released, not leaked. */
  private readonly attempting = new Set<Promise<unknown>>();
  /** @internal */ readonly contention: ContentionHints;
  /** @internal */ readonly ops: LockOperations;
  private readonly independence: IndependenceWatch;
  private closing: Promise<void> | undefined;
  /** Wakes waiters on release notices; opens no connection until something waits. */
  protected readonly releaseNotices: ReleaseNotifier;
  /** @internal Keeps restarted nodes out of quorums for the largest TTL in use (see restart-rule.ts). */
  readonly restarts: RestartRule | undefined;
  /** @internal FIFO queues of `fair: true` acquisitions (see fair-queue.ts). */
  readonly fair: FairQueue;
  /** Events and spans of the lock operations, emitted to this instance's listeners. */
  private readonly telemetry: RedlockTelemetry;
  /** @internal Key names: hash-tagged when a node is a Redis Cluster (see hash-slot.ts). */
  readonly keyNames: KeyNames;
  /** @internal Local hand-offs of plain locks (lock-cohort.ts); undefined with `cohort: false`. */
  readonly cohorts: LockCohorts | undefined;
  /** @internal Addressed wake-ups of plain locks: where this process queues for a key and is woken. */
  readonly wakeups: AddressedWakeups;
  /** What the acquisitions of this instance read and call back (acquire/acquisition.ts). */
  private readonly acquisitions: AcquisitionHost;
  /** @internal What every round of this instance reads (lock-context.ts): attempts get this, never the Redlock. */
  readonly context: LockContext;

  constructor(nodes: ReadonlyArray<RedisNodeInput>, options?: RedlockOptions) {
    super();
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new RedlockArgumentError(
        'Redlock needs at least one Redis node: new Redlock(["redis://host:6379", ...]). Use 1 node for an efficiency lock, 3 or 5 independent nodes for fault tolerance.',
      );
    }
    this.options = resolveRedlockOptions(options);
    checkDistinctNodes(nodes);
    const parts = assembleRedlock(nodes, this.options, options, {
      sink: this.sink,
      // A subclass that replaces waitForRetry may not wait by notice: then no one can be seen waiting.
      byNotice: this.waitForRetry === Redlock.prototype.waitForRetry,
      active: this.active,
      attempting: this.attempting,
      closing: () => this.closing !== undefined,
      lockKey: (resource) => this.lockKey(resource),
      fenceKey: (resource) => this.fenceKey(resource),
      waitForRetry: (...args) => this.waitForRetry(...args),
      onHeld: (lock) => this.onHeld(lock),
    });
    ({ nodes: this.nodes, quorum: this.quorum, keyNames: this.keyNames, restarts: this.restarts, fair: this.fair } = parts);
    ({ wakeups: this.wakeups, contention: this.contention, independence: this.independence, ops: this.ops } = parts);
    ({ telemetry: this.telemetry, context: this.context, cohorts: this.cohorts, acquisitions: this.acquisitions } = parts);
    this.releaseNotices = parts.notices;
  }

  /**
   * Acquires `resource` (or all of `resource[]` together) for `ttlMs`, retrying with
   * jitter while it is held by someone else.
   *
   * @throws {LockNotAcquiredError} still held by someone else after the retries / `timeoutMs`.
   * @throws {QuorumUnavailableError} a majority of nodes refused or dropped the connection
   *   (at once), or timed out (retried like a held lock while the retries / `timeoutMs` last).
   * @example
   * ```ts
   * const lock = await redlock.acquire('order:42', 10_000, { timeoutMs: 2_000 });
   * try { ... } finally { await lock.release(); }
   * ```
   */
  async acquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock> {
    return this.acquireChecked(resource, ttlMs, checkAcquireOptions(options));
  }

  /** `acquire` once its options were validated (tryAcquire and using validate theirs once, not twice). */
  private async acquireChecked(resource: string | readonly string[], ttlMs: number, opts: AcquireOptions): Promise<Lock> {
    const resources = normalizeResources(resource);
    checkTtl(ttlMs);
    checkValidity(this.context, ttlMs);
    const retry = resolveRetry(opts.retry, this.options.retry, 'options.retry');
    const kind = primitiveFor(this.context, resources, opts, retry); // read/write lock or semaphore (primitive-kind.ts)
    this.assertOpen();
    if (this.options.checkIndependence) await this.checkIndependence();
    // Events and spans: no probe (no cost) when nobody listens and nothing records.
    const probe = this.telemetry.startAcquire(resources, ttlMs, opts.fencing === true, kind?.label);
    // Fair queues are for plain locks (option-checks refuses fair with mode/permits; a Redlock-wide fair default skips them).
    const spec = { resources, ttlMs, opts, retry, probe, kind };
    const loop = (session?: FairSession): Promise<Lock> => acquireLoop(this.acquisitions, spec, session);
    const acquisition = kind ? loop() : this.fair.around(resources, opts.fair ?? this.options.fair, loop);
    kind?.watch?.(acquisition);
    return probe ? probe.track(acquisition) : acquisition;
  }

  /**
   * One attempt, no retries: the lock, or `null` when someone else holds it.
   *
   * @throws {QuorumUnavailableError} a majority of nodes failed or timed out.
   * @example
   * ```ts
   * const lock = await redlock.tryAcquire('cron:daily-report', 60_000);
   * if (!lock) return; // another instance runs it
   * ```
   */
  async tryAcquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock | null> {
    const opts = checkAcquireOptions(options);
    try {
      return await this.acquireChecked(resource, ttlMs, { ...opts, retry: false });
    } catch (err) {
      if (err instanceof LockNotAcquiredError) return null;
      throw err;
    }
  }

  /**
   * Runs `routine` while holding the lock, extending it in the background every
   * `ttl/3` and releasing it afterwards. If the lock is lost meanwhile, `lock.signal`
   * aborts (stop writing!) and `using` rejects with a {@link LockLostError}, also when
   * the routine itself completed, because its exclusivity was not guaranteed throughout.
   *
   * @example
   * ```ts
   * const total = await redlock.using(['account:1', 'account:2'], 5_000, async (lock) => {
   *   return transfer(1, 2, 100, { signal: lock.signal });
   * }, { maxHoldMs: 60_000 });
   * ```
   */
  async using<T>(
    resource: string | readonly string[],
    ttlMs: number,
    routine: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T> {
    if (typeof routine !== 'function') {
      throw new RedlockArgumentError('using(resource, ttlMs, routine, options?) needs a function as its third argument.');
    }
    const opts = checkAcquireOptions(options, 'using options');
    const lock = await this.acquireChecked(resource, ttlMs, opts);
    return runWithLock(lock, ttlMs, opts.maxHoldMs ?? this.options.maxHoldMs, routine);
  }

  /**
   * Declares a TTL this process will use, before it uses it (the Nest module calls it with each
   * decorator's `ttl` at bootstrap): it raises `restartRule.declaredTtlMs`. A node first seen
   * younger than the largest declared TTL then sits out of quorums while another node of the
   * set was already older than it (a majority restarted under a survivor). Does nothing with
   * `restartRule: false`. Checked like a TTL.
   *
   * @example
   * ```ts
   * const redlock = new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']);
   * redlock.declareTtl(30_000); // the longest lock this service takes
   * ```
   */
  declareTtl(ttlMs: number): void {
    this.restarts?.declareTtl(checkTtl(ttlMs, 'declareTtl(ttlMs)'));
  }

  /**
   * Asks every node for its role and run id; rejects with `NodeIndependenceError` when a
   * node is a replica or two nodes are the same server. With `checkIndependence: true`
   * this runs once before the first lock operation.
   */
  async checkIndependence(): Promise<NodeReport[]> {
    // async: a closed instance rejects like every other operation instead of throwing synchronously.
    this.assertOpen();
    if (!this.options.checkIndependence) return checkNodeIndependence(this.nodes, this.options.nodeTimeoutMs * 4);
    return this.independence.check();
  }

  /**
   * Checks what can silently break locks, per node: reachability, role, duplicate servers,
   * latency, clock rate skew, persistence, eviction policy and ACL permissions. Each
   * finding is ok, warn or error with a one-line fix; `report.ok` is false on any error.
   * Writes only throw-away keys (`<prefix>lock:redlock-check:*`, hash-tagged on cluster nodes, deleted again).
   *
   * @example
   * ```ts
   * const report = await redlock.checkNodes();
   * for (const f of report.findings) if (f.level !== 'ok') console.warn(f.node, f.message, f.fix);
   * ```
   */
  async checkNodes(options?: CheckNodesOptions): Promise<NodeCheckReport> {
    this.assertOpen();
    const { nodeTimeoutMs, driftFactor } = this.options;
    return checkNodes({ nodes: this.nodes, keyNames: this.keyNames, nodeTimeoutMs, driftFactor }, options);
  }

  /**
   * Per node: whether `resource` is held, its TTL left, its fencing counter, processes
   * waiting on its release notices, and a short hash of the owner token (never the token);
   * and every primitive on it: a read-write lock's readers and waiting writers, a semaphore's
   * permits (`{ permits }` gives its size: "k of N"), a fair queue's waiters in order, the
   * processes queued for the addressed wake-up.
   *
   * @example
   * ```ts
   * const state = await redlock.inspect('order:42');
   * console.log(state.holder ?? 'free', state.nodes.map((n) => `${n.node} ${n.held ? n.ttlMs : '-'}`));
   * const exports = await redlock.inspect('export:acme', { permits: 5 });
   * console.log(`${exports.permits?.held} of ${exports.permits?.of} permits in use`);
   * ```
   */
  async inspect(resource: string, options?: InspectOptions): Promise<LockInspection> {
    this.assertOpen();
    const name = normalizeResources(resource)[0]!;
    const permits = options?.permits;
    if (permits !== undefined) checkPermits(permits, 'inspect(resource, { permits })');
    return inspectResource({ ...this.operatorContext(name), primitives: primitiveKeys(this.keyNames, name, permits) }, name);
  }

  /**
   * Frees a stuck lock on every node, whoever holds it, raises its fencing counter one above
   * every token handed out (the next holder's token, once it writes, makes a fenced store
   * refuse the old holder's writes), and emits a `forceRelease` audit event. The old holder
   * is not told: its lock only fails to extend. Do not use it on a lock whose holder is
   * alive and writing without fencing tokens: two holders would run at once.
   *
   * @throws {RedlockArgumentError} without a non-empty `reason`.
   * @throws {QuorumUnavailableError} fewer than a quorum of nodes answered.
   * @example
   * ```ts
   * await redlock.forceRelease('cron:daily-report', { reason: 'worker host died, INC-1234' });
   * ```
   */
  async forceRelease(resource: string, options: { readonly reason: string }): Promise<ForceReleaseResult> {
    this.assertOpen();
    const name = normalizeResources(resource)[0]!;
    return forceReleaseResource(this.operatorContext(name), name, options, (event) => this.emit('forceRelease', event));
  }

  private operatorContext(resource: string): OperatorContext {
    const { nodes, quorum } = this;
    return {
      nodes,
      quorum,
      timeoutMs: this.options.nodeTimeoutMs,
      lockKey: this.lockKey(resource),
      fenceKey: this.fenceKey(resource),
      ...(this.keyNames.tagged ? {} : { waitersKey: this.keyNames.key('waiters', resource) }),
    };
  }

  /** Connects the clients this library created (they otherwise connect on first use). Resolves even if some nodes are down. */
  async connect(): Promise<void> {
    this.assertOpen();
    await Promise.allSettled(this.nodes.map((node) => node.connect()));
  }

  /** A throwing listener is reported through `onWarning`, like every other library warning. */
  protected override onListenerError(event: RedlockEventName, err: unknown): void {
    this.options.onWarning(listenerWarning(event, err));
  }

  /** How many locks this instance currently holds (acquired, not released, not known lost). */
  get activeLocks(): number {
    return this.active.size;
  }

  /**
   * Releases every lock still held (aborting their signals), stops their watchdogs,
   * and closes the connections this library created. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.independence.stop();
      // Local waiters reject with RedlockClosedError; a hand-off under way releases instead.
      this.cohorts?.close();
      await Promise.allSettled([...this.attempting]);
      const held = [...this.active];
      for (const lock of held) lock.lose('released');
      await Promise.all(held.map((lock) => lock.release()));
      this.restarts?.close();
      await this.wakeups.leaveAll();
      await Promise.all([this.releaseNotices.close(), this.fair.close(), ...this.nodes.map((node) => node.close())]);
    })();
    return this.closing;
  }

  /** Prefixed Redis key of a resource's lock. */
  protected lockKey(resource: string): string {
    return this.keyNames.lock(resource);
  }

  /** Prefixed Redis key of a resource's fencing counter. */
  protected fenceKey(resource: string): string {
    return this.keyNames.fence(resource);
  }

  /**
   * Waits before the next attempt: until a release of one of `keys` is published on any
   * node, or the fallback poll fires (`ms` at the head of the queue, longer behind it),
   * at most `maxMs`. `keys` is the same array across retries (the notifier relies on it).
   */
  protected async waitForRetry(
    keys: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    maxMs = Infinity,
    addressed = false,
    unattempted = false,
  ): Promise<void> {
    await this.releaseNotices.wait(keys, ms, signal, maxMs, addressed, unattempted);
  }

  /**
   * @internal Addressed wake-ups of plain locks (scripts/wake-queue.ts): where this process queues
   * and is woken. Undefined on Redis Cluster nodes (their notices are sharded), when waits do not
   * go through the release notices (a subclass replaced waitForRetry), and once the ACL user was
   * found unable to queue (then waiters wake by the key's release notices, as before).
   */
  get wakeQueue(): WakeQueue | undefined {
    return this.wakeups.queue;
  }

  private assertOpen(): void {
    if (this.closing) throw new RedlockClosedError();
  }

  /** @internal Each lock this instance wins, when it wins it (the testing module follows them). */
  protected onHeld(_lock: Lock): void {}
}
