import { randomBytes } from 'node:crypto';
import {
  LockNotAcquiredError,
  QuorumUnavailableError,
  RedlockArgumentError,
  RedlockClosedError,
} from './errors.js';
import { FenceCatchUp, fenceHeldLock, settleFencing, type FencingContext } from './fencing.js';
import { checkNodeIndependence, type NodeReport } from './independence.js';
import { Lock, type LockOperations, type ReleaseResult } from './lock.js';
import { LockNode } from './lock-node.js';
import type { NodeOutcome } from './node-outcome.js';
import {
  checkAcquireOptions,
  checkTtl,
  normalizeResources,
  resolveRedlockOptions,
  resolveRetry,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
  type ResolvedRetry,
  type UsingOptions,
} from './options.js';
import { toClient, type RedisNodeInput } from './redis-client.js';
import { runRound, type RoundResult } from './round.js';
import { acquireOnNode, parseAcquireReply } from './scripts/acquire.js';
import { extendOnNode, parseExtendReply } from './scripts/extend.js';
import { parseReleaseReply, releaseOnNode } from './scripts/release.js';
import { ReleaseNotifier } from './release-notifier.js';
import { jittered } from './wait.js';
import { runWithLock } from './watchdog.js';
import { RedlockTelemetry, type AcquireProbe } from './telemetry.js';

/** Why one attempt failed. */
type AttemptFailure =
  | { kind: 'held'; nodes: NodeOutcome[]; retryAfterMs: number | undefined }
  | { kind: 'unavailable'; nodes: NodeOutcome[]; reason?: string };

/** 128 bits from the CSPRNG, URL-safe. */
function newOwnerToken(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Nodes on which an attempt may have left our key: all but those that answered that
 * someone else holds it. An `error` counts too: a reply lost on a dropped connection
 * or a client-side command timeout says nothing about whether the SET landed.
 */
function mayHold(outcome: NodeOutcome): boolean {
  return outcome.status !== 'held';
}

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
export class Redlock extends RedlockTelemetry {
  /** Nodes needed for a majority: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  /** The options in force, defaults merged. */
  readonly options: ResolvedRedlockOptions;
  /** @internal */
  readonly nodes: readonly LockNode[];
  private readonly active = new Set<Lock>();
  /** Attempts under way: close() lets them finish, so a lock they win is released, not leaked. */
  private readonly attempting = new Set<Promise<unknown>>();
  private readonly ops: LockOperations;
  private independence: Promise<NodeReport[]> | undefined;
  private closing: Promise<void> | undefined;
  /** Wakes waiters on release notices; opens no connection until something waits. */
  protected readonly releaseNotices: ReleaseNotifier;

  constructor(nodes: ReadonlyArray<RedisNodeInput>, options?: RedlockOptions) {
    super();
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new RedlockArgumentError(
        'Redlock needs at least one Redis node: new Redlock(["redis://host:6379", ...]). Use 1 node for an efficiency lock, 3 or 5 independent nodes for fault tolerance.',
      );
    }
    this.options = resolveRedlockOptions(options);
    const created: LockNode[] = [];
    try {
      for (let i = 0; i < nodes.length; i++) {
        created.push(new LockNode(toClient(nodes[i] as RedisNodeInput, i, this.options.nodeTimeoutMs, this.options.onWarning)));
      }
    } catch (err) {
      for (const node of created) void node.close();
      throw err;
    }
    this.nodes = created;
    this.quorum = Math.floor(created.length / 2) + 1;
    // Linger past one attempt (acquire round + release of partial holds + fencing round),
    // so a retrying waiter finds its channel still subscribed.
    this.releaseNotices = new ReleaseNotifier(
      created.map((node) => node.client),
      { quorum: this.quorum, lingerMs: 3 * this.options.nodeTimeoutMs + 100 },
    );
    this.ops = {
      extend: (lock, ttlMs) => this.observeExtend(lock, ttlMs, () => this.extendLock(lock, ttlMs)),
      release: (lock) => {
        this.releaseNotices.noteRelease(lock.keys);
        return this.observeRelease(lock, () => this.releaseLock(lock));
      },
      fence: (lock) => fenceHeldLock(this.fencingContext(this.options.nodeTimeoutMs), lock, lock.resources.map((r) => this.fenceKey(r))),
      lost: (lock, error) => {
        // No longer held: not counted, and not kept alive by us if its owner never releases it.
        this.active.delete(lock);
        this.observeLost(lock, error);
      },
    };
  }

  /**
   * Acquires `resource` (or all of `resource[]` together) for `ttlMs`, retrying with
   * jitter while it is held by someone else.
   *
   * @throws {LockNotAcquiredError} still held by someone else after the retries / `timeoutMs`.
   * @throws {QuorumUnavailableError} a majority of nodes failed or timed out (not retried).
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
    this.assertOpen();
    if (this.options.checkIndependence) await this.checkIndependence();
    // Events and spans: no probe (no cost) when nobody listens and nothing records.
    const probe = this.startAcquire(resources, ttlMs, opts.fencing === true);
    const acquisition = this.acquireLoop(resources, ttlMs, opts, retry, probe);
    return probe ? probe.track(acquisition) : acquisition;
  }

  /** The attempts of one acquisition, arguments already validated. */
  private async acquireLoop(
    resources: readonly string[],
    ttlMs: number,
    opts: AcquireOptions,
    retry: ResolvedRetry | false,
    probe: AcquireProbe | undefined,
  ): Promise<Lock> {
    const keys = resources.map((r) => this.lockKey(r));
    const fenceKeys = opts.fencing ? resources.map((r) => this.fenceKey(r)) : undefined;
    const token = newOwnerToken();
    const timeoutMs = opts.timeoutMs ?? Infinity;
    const deadline = performance.now() + timeoutMs;
    const maxRetries = retry === false ? 0 : opts.timeoutMs !== undefined && opts.retry === undefined ? Infinity : retry.retries;
    const signal = opts.signal;

    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      this.assertOpen();
      const pending = this.attempt(resources, keys, fenceKeys, token, ttlMs);
      this.attempting.add(pending);
      const result = await pending.finally(() => this.attempting.delete(pending));
      if (result instanceof Lock) {
        // close() began meanwhile: it releases this lock (it is among the active ones).
        if (this.closing) throw new RedlockClosedError();
        if (signal?.aborted) {
          await result.release();
          throw signal.reason;
        }
        probe?.acquired(attempt, result.acquireNodes);
        return result;
      }
      if (result.kind === 'unavailable') {
        throw new QuorumUnavailableError({
          resources,
          attempts: attempt,
          nodes: result.nodes,
          quorum: this.quorum,
          ...(result.reason ? { reason: result.reason } : {}),
        });
      }
      const wait = retry === false ? 0 : jittered(retry.delayMs, retry.jitterMs);
      if (attempt > maxRetries || performance.now() + wait >= deadline) {
        throw new LockNotAcquiredError({ resources, attempts: attempt, nodes: result.nodes, retryAfterMs: result.retryAfterMs });
      }
      probe?.wait(attempt, wait, result.nodes, result.retryAfterMs);
      await this.waitForRetry(keys, wait, signal);
      probe?.resumed();
    }
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
   * Asks every node for its role and run id; rejects with `NodeIndependenceError` when a
   * node is a replica or two nodes are the same server. With `checkIndependence: true`
   * this runs once before the first lock operation.
   */
  async checkIndependence(): Promise<NodeReport[]> {
    // async: a closed instance rejects like every other operation instead of throwing synchronously.
    this.assertOpen();
    if (!this.options.checkIndependence) return checkNodeIndependence(this.nodes, this.options.nodeTimeoutMs * 4);
    if (!this.independence) {
      const check = checkNodeIndependence(this.nodes, this.options.nodeTimeoutMs * 4).then(
        (reports) => {
          this.recheckWhenReachable(check, reports);
          return reports;
        },
        (err: unknown) => {
          // A failure to ask is retried on the next call; a misconfiguration is final.
          if (!(err instanceof Error && err.name === 'NodeIndependenceError') && this.independence === check) {
            this.independence = undefined;
          }
          throw err;
        },
      );
      this.independence = check;
    }
    return this.independence;
  }

  /**
   * A node that was down when the nodes were checked was not checked at all: once it
   * connects, the check runs again, so a node that comes up as a replica (or as a second
   * address of another node) fails every later operation instead of going unnoticed.
   */
  private recheckWhenReachable(check: Promise<NodeReport[]>, reports: readonly NodeReport[]): void {
    // The first of the missing nodes to connect re-runs the check (for all nodes); the
    // others' callbacks then find a newer check in place and do nothing.
    const recheck = (): void => {
      if (this.closing || this.independence !== check) return;
      this.independence = undefined;
      // Handled here; an operation that awaits the stored check sees the same outcome.
      this.checkIndependence().catch(() => undefined);
    };
    // Event-driven only: a node that answers TCP but not INFO (paused) is not polled.
    reports.forEach((report, i) => {
      if (!report.reachable) this.nodes[i]!.onNextReady(recheck);
    });
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
      await Promise.allSettled([...this.attempting]);
      const held = [...this.active];
      for (const lock of held) lock.lose('released');
      await Promise.all(held.map((lock) => lock.release()));
      await Promise.all([this.releaseNotices.close(), ...this.nodes.map((node) => node.close())]);
    })();
    return this.closing;
  }

  /** Prefixed Redis key of a resource's lock. */
  protected lockKey(resource: string): string {
    return `${this.options.keyPrefix}lock:${resource}`;
  }

  /** Prefixed Redis key of a resource's fencing counter. */
  protected fenceKey(resource: string): string {
    return `${this.options.keyPrefix}fence:${resource}`;
  }

  /**
   * Waits before the next attempt: until a release of one of `keys` is published on any
   * node, or `ms` (the jittered retry delay, a fallback against lost notices) pass.
   * `keys` is the same array across one acquisition's retries (the notifier relies on it).
   */
  protected async waitForRetry(keys: readonly string[], ms: number, signal: AbortSignal | undefined): Promise<void> {
    await this.releaseNotices.wait(keys, ms, signal);
  }

  private assertOpen(): void {
    if (this.closing) throw new RedlockClosedError();
  }

  private fencingContext(timeoutMs: number): FencingContext {
    return { nodes: this.nodes, quorum: this.quorum, timeoutMs };
  }

  private nodeTimeout(ttlMs: number): number {
    return Math.max(1, Math.min(this.options.nodeTimeoutMs, Math.floor(ttlMs / 3)));
  }

  private drift(ttlMs: number): number {
    return Math.floor(ttlMs * this.options.driftFactor) + this.options.driftConstantMs;
  }

  /** A ttl the drift allowance eats entirely could never give a valid lock: a config error, not an outage. */
  private checkValidity(ttlMs: number): void {
    const drift = this.drift(ttlMs);
    if (ttlMs <= drift) {
      throw new RedlockArgumentError(
        `ttlMs (${ttlMs}) must be longer than the clock-drift allowance of ${drift} ms ` +
          '(ttl × driftFactor + driftConstantMs), or no lock could ever be valid. Use a longer ttl.',
      );
    }
  }

  private async attempt(
    resources: readonly string[],
    keys: readonly string[],
    fenceKeys: readonly string[] | undefined,
    token: string,
    ttlMs: number,
  ): Promise<Lock | AttemptFailure> {
    const start = performance.now();
    const timeoutMs = this.nodeTimeout(ttlMs);
    const sendKeys = fenceKeys ? [...keys, ...fenceKeys] : keys;
    const catchUp = fenceKeys ? new FenceCatchUp(this.nodes, fenceKeys) : undefined;
    const round = await runRound(
      this.nodes,
      (node) => acquireOnNode(node, sendKeys, token, ttlMs, fenceKeys !== undefined),
      parseAcquireReply,
      { quorum: this.quorum, timeoutMs, early: true, ...(catchUp ? { late: catchUp.late } : {}) },
    );
    let failure: AttemptFailure | undefined;
    let fencingTokens: ReadonlyMap<string, bigint> | undefined;
    if (round.ok < this.quorum) {
      failure = this.classify(round);
    } else if (fenceKeys && catchUp) {
      const fenced = await settleFencing(this.fencingContext(timeoutMs), round, resources, fenceKeys, catchUp);
      if (fenced.ok) fencingTokens = fenced.tokens;
      else failure = { kind: 'unavailable', nodes: fenced.nodes, reason: fenced.reason };
    }
    const expiresAtMono = start + ttlMs - this.drift(ttlMs);
    if (!failure && expiresAtMono <= performance.now()) {
      failure = {
        kind: 'unavailable',
        nodes: round.outcomes,
        reason: `a quorum answered, but only after the lock's validity (${ttlMs} ms minus drift) had run out`,
      };
    }
    if (failure) {
      this.releaseOn(round.outcomes, keys, token);
      return failure;
    }
    const lock = new Lock({ resources, keys, value: token, expiresAtMono, nodes: round.outcomes, ...(fencingTokens ? { fencingTokens } : {}) }, this.ops);
    this.active.add(lock);
    return lock;
  }

  /** Contention when the nodes that failed alone do not rule out a quorum; otherwise unavailable. */
  private classify(round: RoundResult<unknown>): AttemptFailure {
    const n = this.nodes.length;
    let failed = 0;
    const heldTtls: number[] = [];
    for (const o of round.outcomes) {
      if (o.status === 'error' || o.status === 'timeout') failed++;
      if (o.status === 'held' && o.ttlMs !== undefined) heldTtls.push(o.ttlMs);
    }
    if (failed > n - this.quorum) return { kind: 'unavailable', nodes: round.outcomes };
    // The resource is free again once a majority is free: the nodes we just won, plus the
    // held ones in order of expiry. A stale key on one node does not stretch the estimate.
    heldTtls.sort((a, b) => a - b);
    const stillNeeded = this.quorum - round.ok;
    const retryAfterMs = stillNeeded >= 1 && stillNeeded <= heldTtls.length ? heldTtls[stillNeeded - 1] : undefined;
    return { kind: 'held', nodes: round.outcomes, retryAfterMs };
  }

  /**
   * Releases a failed attempt's possible holds, so our own partial holds never block our
   * retry. Sent, not awaited: each node runs commands of one connection in order, so the
   * release is applied before our next attempt on that node, without costing a round trip.
   */
  private releaseOn(outcomes: readonly NodeOutcome[], keys: readonly string[], token: string): void {
    for (let i = 0; i < this.nodes.length; i++) {
      if (mayHold(outcomes[i]!)) releaseOnNode(this.nodes[i]!, keys, token).catch(() => undefined);
    }
  }

  private async extendLock(lock: Lock, ttlMs: number): Promise<readonly NodeOutcome[]> {
    this.checkValidity(ttlMs);
    const start = performance.now();
    const round = await runRound(
      this.nodes,
      (node) => extendOnNode(node, lock.keys, lock.value, ttlMs),
      parseExtendReply,
      { quorum: this.quorum, timeoutMs: this.nodeTimeout(ttlMs), early: true },
    );
    const expiresAtMono = start + ttlMs - this.drift(ttlMs);
    if (round.ok >= this.quorum && expiresAtMono > performance.now()) {
      lock.setExpiry(expiresAtMono);
      return round.outcomes;
    }
    const gone = round.outcomes.filter((o) => o.status === 'absent').length;
    if (gone > this.nodes.length - this.quorum) throw lock.lose('not-owner', round.outcomes);
    // Any node, even one that timed out, may have applied the new ttl: when that ends sooner
    // than the current validity (a shorter ttl, or a round slower than it), only it is certain.
    if (expiresAtMono < performance.now() + lock.remainingMs) lock.setExpiry(expiresAtMono);
    if (lock.remainingMs <= 0) throw lock.lose('expired', round.outcomes);
    throw new QuorumUnavailableError({
      resources: lock.resources,
      attempts: 1,
      nodes: round.outcomes,
      quorum: this.quorum,
      reason: `extend reached only ${round.ok} node(s); the lock stays valid until its current expiration`,
    });
  }

  private async releaseLock(lock: Lock): Promise<ReleaseResult> {
    this.active.delete(lock);
    // Resolves once a majority answered: then the lock is free for others. The remaining
    // nodes' releases are already sent and still apply; their outcomes stay 'pending'.
    const round = await runRound(this.nodes, (node) => releaseOnNode(node, lock.keys, lock.value), parseReleaseReply, {
      quorum: this.quorum,
      timeoutMs: this.options.nodeTimeoutMs,
      early: false,
      settle: this.quorum,
    });
    return { released: round.ok, nodes: round.outcomes };
  }
}
