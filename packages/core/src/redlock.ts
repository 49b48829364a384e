import { LockLostError, LockNotAcquiredError, RedlockArgumentError, RedlockClosedError } from './errors/errors.js';
import { runAcquireLoop } from './acquire/acquire-loop.js';
import { newCohorts } from './cohorts/cohort-rounds.js';
import { cohortId, type LockCohorts } from './cohorts/lock-cohort.js';
import { arbiterOf, contentionHints } from './rounds/arbiter-round.js';
import type { AttemptFailure } from './rounds/attempt-failure.js';
import { fenceHeldLock, type FencingContext } from './fencing/fencing.js';
import { FairQueue, type FairSession } from './primitives/fair-queue.js';
import { checkNodeIndependence, type NodeReport } from './safety/independence.js';
import { IndependenceWatch } from './safety/independence-watch.js';
import { settleExtend } from './lock/extend-outcome.js';
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
import { Lock, type LockOperations, type ReleaseResult } from './lock/lock.js';
import { LockNode } from './nodes/lock-node.js';
import { newOwnerToken } from './lock/owner-token.js';
import { attemptMutex } from './acquire/mutex-attempt.js';
import { checkDistinctNodes } from './nodes/node-input.js';
import type { NodeOutcome } from './errors/node-outcome.js';
import {
  checkAcquireOptions,
  checkPermits,
  checkTtl,
  checkTtlOverDrift,
  normalizeResources,
  resolveRedlockOptions,
  resolveRetry,
} from './options/option-checks.js';
import {
  DEFAULT_RETRY,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
  type ResolvedRetry,
  type UsingOptions,
} from './options/options.js';
import type { RedisNodeInput } from './nodes/redis-client.js';
import { keyNamesFor, nodeHandle, type KeyNames } from './nodes/cluster-client.js';
import { enableReplicaSync } from './nodes/replica-sync.js';
import { runRound } from './rounds/round.js';
import { attemptPrimitive, type PrimitiveKind } from './primitives/primitive-attempt.js';
import { primitiveFor } from './primitives/primitive-kind.js';
import { nodeScriptsOf, readPhaseChannels } from './primitives/read-write-lock.js';
import { extendOnNode, parseExtendReply } from './scripts/extend.js';
import { parseReleaseReply } from './scripts/release.js';
import { ReleaseNotifier } from './wakeups/release-notifier.js';
import { passTurnOnNode, type WakeQueue } from './scripts/wake-queue.js';
import type { QueueFollowUp } from './scripts/acquire.js';
import { AddressedWakeups } from './wakeups/addressed-wakeups.js';
import { createLockContext, type LockContext } from './lock/lock-context.js';
import { primitiveOf } from './primitives/primitive-label.js';
import { RestartRule } from './safety/restart-rule.js';
import { runWithLock } from './lock/watchdog.js';
import { RedlockEmitter, type RedlockEventName } from './observability/events.js';
import type { LockEngine } from './engine.js';
import { listenerWarning, RedlockTelemetry, type AcquireProbe } from './observability/telemetry.js';

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
  /** @internal */ readonly contention = contentionHints(() => ({ restarts: this.restarts, notices: this.releaseNotices }));
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
    const created: LockNode[] = [];
    try {
      for (let i = 0; i < nodes.length; i++) {
        created.push(new LockNode(nodeHandle(nodes[i], i, this.options.nodeTimeoutMs, this.options.onWarning), this.options.onWarning));
      }
      this.keyNames = keyNamesFor(this.options.keyPrefix, created);
      enableReplicaSync(created, options?.replicaSync, this.options.nodeTimeoutMs);
    } catch (err) {
      for (const node of created) void node.close();
      throw err;
    }
    this.nodes = created;
    this.quorum = Math.floor(created.length / 2) + 1;
    this.independence = new IndependenceWatch(created, this.options.nodeTimeoutMs * 4);
    this.telemetry = new RedlockTelemetry(this.sink, { nodeCount: created.length, quorum: this.quorum, tracing: this.options.tracing });
    const rule = this.options.restartRule;
    this.restarts = rule
      ? new RestartRule(created, {
          keyPrefix: this.options.keyPrefix,
          maxTtlMs: rule.maxTtlMs,
          declaredTtlMs: rule.declaredTtlMs,
          // A young node's verdict waits this long at most for the other nodes' first INFO.
          firstLookMs: this.options.nodeTimeoutMs,
          onWarning: this.options.onWarning,
        })
      : undefined;
    // A subclass that replaces waitForRetry may not wait by notice: then no one can be seen waiting.
    const byNotice = this.waitForRetry === Redlock.prototype.waitForRetry;
    const names = this.keyNames;
    const lockPrefix = names.lock('');
    const queue: WakeQueue | undefined =
      byNotice && !names.tagged
        ? {
            id: newOwnerToken().slice(0, 16),
            prefix: `${this.options.keyPrefix}wake:`,
            waitersKey: (lockKey) => names.key('waiters', lockKey.slice(lockPrefix.length)),
          }
        : undefined;
    // Linger past one attempt (acquire round + release of partial holds + fencing round),
    // so a retrying waiter finds its channel still subscribed.
    this.releaseNotices = new ReleaseNotifier(
      created.map((node) => node.client),
      {
        quorum: this.quorum,
        lingerMs: 3 * this.options.nodeTimeoutMs + 100,
        arbiterOf: (key) => arbiterOf(created, key, Infinity),
        isDown: (node) => created[node]!.connection.isDown,
        wakesAll: readPhaseChannels(this.options.keyPrefix),
        ...(queue
          ? {
              addressed: {
                channel: queue.prefix + queue.id,
                queuedPollMs: DEFAULT_RETRY.delayMs,
                pass: (node: number, key: string) => void passTurnOnNode(created[node]!, queue, key).catch(() => undefined),
              },
            }
          : {}),
      },
    );
    this.fair = new FairQueue(created, this.quorum, this.options, this.keyNames);
    const notices = this.releaseNotices;
    this.wakeups = new AddressedWakeups(queue, {
      nodes: created,
      notices,
      nodeTimeoutMs: this.options.nodeTimeoutMs,
      onWarning: this.options.onWarning,
      usable: this.contention.usable,
    });
    // A Lock that handed its keys over must never reach them again (its token is the new holder's).
    const stale = (lock: Lock): LockLostError | undefined => this.cohorts?.refuse(lock);
    const fencing = (): FencingContext => ({
      ...this.context.fencingContext(this.options.nodeTimeoutMs),
      counted: (n, sent) => this.context.counted(n, sent),
    });
    this.ops = {
      extend: (lock, ttlMs) => {
        const refused = stale(lock);
        return refused ? Promise.reject(refused) : this.telemetry.observeExtend(lock, ttlMs, () => this.extendLock(lock, ttlMs));
      },
      release: (lock) =>
        this.telemetry.observeRelease(lock, () =>
          this.cohorts
            ? this.cohorts.release(lock, (yieldTo, waiting) => this.releaseToNodes(lock, yieldTo, waiting))
            : this.releaseToNodes(lock, 0, 0),
        ),
      fence: (lock) => {
        const refused = stale(lock);
        const fenceKeys = lock.resources.map((r) => this.fenceKey(r));
        return refused ? Promise.reject(refused) : fenceHeldLock(fencing(), lock, fenceKeys);
      },
      lost: (lock, error) => {
        // A handed-off Lock's late extension says nothing about its successor.
        if (stale(lock)) return;
        // No longer held: not counted, and not kept alive by us if its owner never releases it.
        this.active.delete(lock);
        this.cohorts?.lost(lock);
        this.telemetry.observeLost(lock, error);
      },
    };
    this.context = createLockContext({
      nodes: created,
      quorum: this.quorum,
      options: this.options,
      keyNames: this.keyNames,
      restarts: this.restarts,
      active: this.active,
      ops: this.ops,
      contention: this.contention,
      contended: (key) => notices.contended(key),
    });
    const cohorts = this.options.cohort
      ? newCohorts(this.context, this.options.cohort, fencing, notices, byNotice, () => this.wakeups.queue)
      : undefined;
    this.cohorts = cohorts;
    if (cohorts) this.releaseNotices.turnDelay = (key) => cohorts.turnDelay(key);
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
    this.checkValidity(ttlMs);
    const retry = resolveRetry(opts.retry, this.options.retry, 'options.retry');
    const kind = primitiveFor(this.context, resources, opts, retry); // read/write lock or semaphore (primitive-kind.ts)
    this.assertOpen();
    if (this.options.checkIndependence) await this.checkIndependence();
    // Events and spans: no probe (no cost) when nobody listens and nothing records.
    const probe = this.telemetry.startAcquire(resources, ttlMs, opts.fencing === true, kind?.label);
    // Fair queues are for plain locks (option-checks refuses fair with mode/permits; a Redlock-wide fair default skips them).
    const loop = (session?: FairSession): Promise<Lock> => this.acquireLoop(resources, ttlMs, opts, retry, probe, kind, session);
    const acquisition = kind ? loop() : this.fair.around(resources, opts.fair ?? this.options.fair, loop);
    kind?.watch?.(acquisition);
    return probe ? probe.track(acquisition) : acquisition;
  }

  /** The attempts of one acquisition, arguments already validated (acquire-loop.ts). */
  private acquireLoop(
    resources: readonly string[],
    ttlMs: number,
    opts: AcquireOptions,
    retry: ResolvedRetry | false,
    probe: AcquireProbe | undefined,
    kind?: PrimitiveKind,
    fair?: FairSession,
  ): Promise<Lock> {
    const keys = kind?.waitKeys ?? resources.map((r) => this.lockKey(r));
    const fenceKeys = opts.fencing ? resources.map((r) => this.fenceKey(r)) : undefined;
    const token = newOwnerToken();
    // Nodes where an earlier attempt of this acquisition (same token) may have left our key (see MutexAttempt.mayHold).
    const mayHold = new Set<LockNode>();
    const signal = opts.signal;
    // Cohorts are for plain locks: a fair lock's order lives on the nodes, a primitive is not one owner.
    const cohorts = kind || fair ? undefined : this.cohorts;
    const spec = { resources, keys, ttlMs, fencing: fenceKeys !== undefined, fenceKeys };
    const notices = this.releaseNotices;
    // Addressed wake-ups: a plain lock of one resource queues its process on the key's arbiter.
    // Only an acquisition that may wait queues (tryAcquire does not).
    const mayWait = retry !== false && (retry.retries > 0 || opts.timeoutMs !== undefined);
    const wakeups = this.wakeups;
    const followUp = wakeups.queue && mayWait && !kind && !fair && keys.length === 1 ? wakeups.followUp(keys[0]!) : undefined;
    const acquired = runAcquireLoop({
      resources,
      opts,
      retry,
      probe,
      quorum: this.quorum,
      cohort: cohorts ? { cohorts, id: cohortId(keys), spec } : undefined,
      closing: () => this.closing !== undefined,
      queued: () => followUp !== undefined && notices.queued(keys[0]!),
      wait: (ms, maxMs, unattempted) =>
        fair ? fair.wait(ms, signal, maxMs) : this.waitForRetry(keys, ms, signal, maxMs, followUp !== undefined, unattempted === true),
      attempt: (attempt) => {
        const turn = followUp !== undefined && notices.lastTurn(keys);
        // A fair waiter attempts when the queue says so: no arbiter needed (nor wanted: the queue's round starts at node 0).
        const pending = kind
          ? attemptPrimitive(this.context, kind, token, ttlMs)
          : fair
            ? this.attempt(resources, keys, fenceKeys, token, ttlMs, false, undefined, fair.sender(keys[0]!, fenceKeys?.[0], token, ttlMs))
            : // Every third attempt asks all nodes: an arbiter that missed a release (a minority node
              // keeping a stale key until its TTL) must not block waiters that a majority would grant.
              // Nor does an attempt on this process' turn: the arbiter just woke it, and no other waits on it.
              this.attempt(
                resources,
                keys,
                fenceKeys,
                token,
                ttlMs,
                attempt % 3 !== 0 && (attempt > 1 || notices.contended(keys[0]!)) && !turn,
                mayHold,
                undefined,
                followUp,
              ).then((result) => {
                // Lost on its turn: the holder's release on the other nodes may still have been on its
                // way (the arbiter's came first). One more attempt at once; then it waits for its turn.
                if (turn && !(result instanceof Lock)) notices.noteFree(keys[0]!);
                return result;
              });
        this.attempting.add(pending);
        return pending.finally(() => this.attempting.delete(pending));
      },
    });
    // Given up (timed out, aborted, refused): its process leaves the queue unless another acquisition waits there.
    if (!followUp) return acquired;
    return acquired.catch(async (err: unknown) => {
      followUp.end();
      await wakeups.leave(keys[0]!);
      throw err;
    });
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

  /** A ttl the drift allowance eats entirely could never give a valid lock: a config error, not an outage. */
  private checkValidity(ttlMs: number): void {
    checkTtlOverDrift(ttlMs, this.context.drift(ttlMs));
  }

  /** One attempt of a plain lock (mutex-attempt.ts); `send` replaces the acquire script (a fair waiter's). */
  private async attempt(
    resources: readonly string[],
    keys: readonly string[],
    fenceKeys: readonly string[] | undefined,
    token: string,
    ttlMs: number,
    contended: boolean,
    mayHold: Set<LockNode> | undefined,
    send?: (node: LockNode) => Promise<unknown>,
    followUp?: QueueFollowUp,
  ): Promise<Lock | AttemptFailure> {
    const arbiterKey = contended ? keys[0] : undefined;
    const result = await attemptMutex(this.context, {
      resources,
      keys,
      fenceKeys,
      token,
      ttlMs,
      arbiterKey,
      contention: this.contention,
      mayHold,
      send,
      ...(followUp ? { queue: { arbiter: this.wakeups.node(keys[0]!, this.context.nodeTimeout(ttlMs)), followUp } } : {}),
    });
    if (result instanceof Lock) {
      if (followUp) this.releaseNotices.noteWon(keys[0]!);
      this.onHeld(result);
    }
    return result;
  }

  /** @internal Each lock this instance wins, when it wins it (the testing module follows them). */
  protected onHeld(_lock: Lock): void {}

  private async extendLock(lock: Lock, ttlMs: number): Promise<readonly NodeOutcome[]> {
    this.checkValidity(ttlMs);
    const ctx = this.context;
    const start = performance.now();
    this.restarts?.noteTtl(ttlMs);
    const round = await runRound(
      this.nodes,
      (node) => ctx.counted(node, (nodeScriptsOf(lock)?.extend ?? extendOnNode)(node, lock.keys, lock.value, ttlMs)),
      parseExtendReply,
      { quorum: this.quorum, timeoutMs: ctx.nodeTimeout(ttlMs), early: true },
    );
    return settleExtend(lock, round, start + ttlMs - ctx.drift(ttlMs), this.quorum);
  }

  /**
   * A release on the nodes (not a hand-off); `yieldTo` > 0: a cohort gives way to that many waiting
   * processes; `waiting`: waiters of this instance left by a cohort, which attempt after it.
   */
  private releaseToNodes(lock: Lock, yieldTo: number, waiting: number): Promise<ReleaseResult> {
    this.releaseNotices.noteRelease(lock.keys, yieldTo);
    return this.releaseLock(lock, waiting);
  }

  /**
   * The release of a plain lock of one resource with addressed wake-ups: the arbiter wakes the next
   * queued process (and queues this one again behind it when waiters of ours are left); the other
   * nodes only delete. Undefined for every other lock.
   */
  private addressedRelease(lock: Lock, waiting: number): ((node: LockNode) => Promise<unknown>) | undefined {
    if (lock.keys.length !== 1 || primitiveOf(lock) !== undefined || this.fair.ticketOf(lock) !== undefined) return undefined;
    return this.wakeups.release(lock.keys[0]!, lock.value, waiting);
  }

  private async releaseLock(lock: Lock, waiting = 0): Promise<ReleaseResult> {
    this.active.delete(lock);
    // Resolves once a majority answered: then the lock is free for others. The remaining
    // nodes' releases are already sent and still apply; their outcomes stay 'pending'.
    const scripted = nodeScriptsOf(lock)?.release;
    const release = scripted
      ? (node: LockNode) => scripted(node, lock.keys, lock.value)
      : (this.addressedRelease(lock, waiting) ?? this.fair.releaser(lock));
    const round = await runRound(this.nodes, release, parseReleaseReply, {
      quorum: this.quorum,
      timeoutMs: this.options.nodeTimeoutMs,
      early: false,
      settle: this.quorum,
    });
    return { released: round.ok, nodes: round.outcomes };
  }
}
