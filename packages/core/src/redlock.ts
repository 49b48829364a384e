import { LockNotAcquiredError, RedlockArgumentError } from './errors/errors.js';
import { acquireLoop } from './acquire/acquisition.js';
import type { FairSession } from './primitives/fair-session.js';
import { checkNodeIndependence, type NodeReport } from './safety/independence.js';
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
import type { Lock } from './lock/lock.js';
import { checkPermits, checkTtl, normalizeResources, resolveRetry } from './options/option-checks.js';
import { checkAcquireOptions } from './options/acquire-option-checks.js';
import type { AcquireOptions, UsingOptions } from './options/options.js';
import { primitiveFor } from './primitives/primitive-kind.js';
import type { WakeQueue } from './scripts/wake-queue.js';
import { runWithLock } from './lock/watchdog.js';
import { RedlockBase } from './redlock-base.js';
import type { LockEngine } from './engine.js';

// The public operations only: the parts they read, the constructor that wires them and the
// seams a subclass may replace (lockKey, waitForRetry, onHeld, ...) are in redlock-base.ts.

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
export class Redlock extends RedlockBase implements LockEngine {
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

  /**
   * @internal Addressed wake-ups of plain locks (scripts/wake-queue.ts): where this process queues
   * and is woken. Undefined on Redis Cluster nodes (their notices are sharded), when waits do not
   * go through the release notices (a subclass replaced waitForRetry), and once the ACL user was
   * found unable to queue (then waiters wake by the key's release notices, as before).
   */
  get wakeQueue(): WakeQueue | undefined {
    return this.wakeups.queue;
  }
}
