import {
  LockNotAcquiredError,
  RedlockArgumentError,
  RedlockClosedError,
  type AcquireOptions,
  type Lock,
  type LockEngine,
  type RedlockEventName,
  type UsingOptions,
} from '@redlock-nest/core';
import type { EngineHealth } from '@redlock-nest/core/operator';
import {
  checkAcquireOptions,
  checkTtl,
  createLock,
  normalizeResources,
  RedlockEmitter,
  runWithLock,
  type LockOperations,
} from '@redlock-nest/core/internal';
import { acquireWithLease, Contended, LeaseGone, type AcquireContext, type Acquired, type AcquireRequest } from './etcd-acquire.js';
import type { HeldKey } from './etcd-ops.js';
import { EtcdTransport, EtcdUnreachableError } from './http-transport.js';
import type { QueueMode } from './keys.js';
import { LeaseKeeper } from './lease-keeper.js';
import { lockOperations, unavailable } from './lock-ops.js';
import { probeMembers } from './member-health.js';
import { resolveEtcdOptions, type EtcdLocksOptions, type ResolvedEtcdOptions } from './options.js';
import { QueueWatch } from './queue-watch.js';

/**
 * The core's lock API over an etcd v3 cluster (consensus, not a quorum of independent nodes): the
 * same `acquire`, `tryAcquire`, `using`, options, `Lock`s and errors as `Redlock`, and the same
 * NestJS decorators through `RedlockModule.forRoot({ engine })`. A lock is a key per resource,
 * attached to a lease whose TTL is the lock's; waiters queue by create revision and are woken by
 * the deletion ahead of them (FIFO); the fencing token is the key's create revision.
 *
 * @example
 * ```ts
 * const locks = new EtcdLocks({ hosts: ['http://etcd-a:2379', 'http://etcd-b:2379', 'http://etcd-c:2379'] });
 * await locks.using('order:42', 10_000, async (lock) => {
 *   await orders.markPaid(42, { fencingToken: lock.fencingToken!, signal: lock.signal });
 * });
 * await locks.close();
 * ```
 */
export class EtcdLocks extends RedlockEmitter implements LockEngine {
  /** The options in force, defaults merged. */
  readonly options: ResolvedEtcdOptions;
  private readonly transport: EtcdTransport;
  private readonly keeper: LeaseKeeper;
  private readonly watches = new Map<string, QueueWatch>();
  private readonly active = new Map<Lock, { keys: readonly HeldKey[]; acquiredAt: number }>();
  private readonly attempting = new Set<Promise<unknown>>();
  /** Revokes of failed acquisitions, sent without holding up their callers. */
  private readonly background = new Set<Promise<unknown>>();
  private readonly ops: LockOperations;
  private readonly context: AcquireContext;
  private closing: Promise<void> | undefined;

  constructor(options: EtcdLocksOptions) {
    super();
    this.options = resolveEtcdOptions(options);
    this.transport = new EtcdTransport(this.options);
    this.keeper = new LeaseKeeper(this.transport);
    const drift = (ttlMs: number): number => this.drift(ttlMs);
    this.context = {
      transport: this.transport,
      keeper: this.keeper,
      keyPrefix: this.options.keyPrefix,
      drift,
      track: (pending) => {
        this.background.add(pending);
        void pending.finally(() => this.background.delete(pending));
      },
      watch: (prefix) => {
        let watch = this.watches.get(prefix);
        if (!watch) {
          const created = new QueueWatch(this.transport, prefix, this.options.requestTimeoutMs, () => {
            if (this.watches.get(prefix) === created) this.watches.delete(prefix);
          });
          watch = created;
          this.watches.set(prefix, watch);
        }
        return watch;
      },
    };
    this.ops = lockOperations({
      transport: this.transport,
      requestTimeoutMs: this.options.requestTimeoutMs,
      drift,
      keysOf: (lock) => this.active.get(lock)?.keys ?? [],
      released: (lock, result, startedAt) => {
        const held = this.active.get(lock);
        this.active.delete(lock);
        this.notify('release', () => ({
          resources: lock.resources,
          heldMs: performance.now() - (held?.acquiredAt ?? lock.acquiredAtMono),
          durationMs: performance.now() - startedAt,
          released: result.released,
          nodes: result.nodes,
        }));
      },
      lost: (lock, error) => {
        this.active.delete(lock);
        this.notify('lost', () => ({
          resources: lock.resources,
          reason: error.reason,
          heldMs: performance.now() - lock.acquiredAtMono,
          nodes: error.nodes,
        }));
      },
    });
  }

  /** Members a lock needs: a majority of the configured hosts. */
  get quorum(): number {
    return Math.floor(this.options.hosts.length / 2) + 1;
  }

  /** How many locks this instance holds (acquired, neither released nor known lost). */
  get activeLocks(): number {
    return this.active.size;
  }

  /**
   * Acquires `resource` (or all of `resource[]`, all or nothing, in sorted order) for `ttlMs`,
   * waiting in the resource's FIFO queue until `timeoutMs` (default: the retry policy's budget).
   *
   * @throws {LockNotAcquiredError} still held by someone else at the deadline.
   * @throws {QuorumUnavailableError} no member answered with a leader before the deadline.
   * @example
   * ```ts
   * const lock = await locks.acquire('order:42', 10_000, { timeoutMs: 2_000 });
   * try { ... } finally { await lock.release(); }
   * ```
   */
  async acquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock> {
    return this.acquireChecked(resource, ttlMs, checkAcquireOptions(options), false);
  }

  /**
   * One attempt: the lock, or `null` when someone else holds it.
   * @example
   * ```ts
   * const lock = await locks.tryAcquire('cron:daily-report', 60_000);
   * if (!lock) return;
   * ```
   */
  async tryAcquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock | null> {
    try {
      return await this.acquireChecked(resource, ttlMs, checkAcquireOptions(options), true);
    } catch (err) {
      if (err instanceof LockNotAcquiredError) return null;
      throw err;
    }
  }

  /**
   * Runs `routine` holding the lock; the lease is kept alive every `ttl/3` meanwhile (the core's
   * watchdog) and revoked afterwards. If the lock is lost, `lock.signal` aborts and `using` rejects
   * with a `LockLostError`.
   * @example
   * ```ts
   * await locks.using('account:7', 5_000, async (lock) => debit(7, { signal: lock.signal }));
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
    const lock = await this.acquireChecked(resource, ttlMs, opts, false);
    return runWithLock(lock, ttlMs, opts.maxHoldMs ?? this.options.maxHoldMs, routine);
  }

  /**
   * Each member's state (leader, raft index, version), for a health check. Never rejects.
   * @example
   * ```ts
   * const { reachable, quorum, nodes } = await locks.probeHealth(1_000);
   * ```
   */
  probeHealth(timeoutMs: number): Promise<EngineHealth> {
    return probeMembers(this.transport, timeoutMs);
  }

  /** Releases every lock still held (aborting their signals), closes the watches and connections. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.attempting]);
      const held = [...this.active.keys()];
      for (const lock of held) lock.lose('released');
      await Promise.all(held.map((lock) => lock.release()));
      await Promise.allSettled([...this.background]);
      for (const watch of [...this.watches.values()]) watch.close();
      this.keeper.stop();
      this.transport.close();
    })();
    return this.closing;
  }

  /** A throwing listener is reported through `onWarning`. */
  protected override onListenerError(event: RedlockEventName, err: unknown): void {
    this.options.onWarning(`A listener of '${event}' threw: ${err instanceof Error ? err.message : String(err)}`);
  }

  private drift(ttlMs: number): number {
    return Math.floor(ttlMs * this.options.driftFactor) + this.options.driftConstantMs;
  }

  private async acquireChecked(resource: string | readonly string[], ttlMs: number, opts: UsingOptions, once: boolean): Promise<Lock> {
    const resources = normalizeResources(resource);
    checkTtl(ttlMs);
    if ((opts.mode !== undefined || opts.permits !== undefined) && resources.length !== 1) {
      const what = opts.permits !== undefined ? 'A semaphore' : 'A read-write lock';
      throw new RedlockArgumentError(
        `${what} covers one resource, got ${resources.length}. Acquire them one after another, in a fixed order.`,
      );
    }
    if (this.closing) throw new RedlockClosedError();
    const start = performance.now();
    const budget = opts.timeoutMs ?? (opts.retry !== undefined || once ? 0 : this.options.waitBudgetMs);
    const mode: QueueMode = opts.permits !== undefined ? 'p' : opts.mode === 'read' ? 'r' : 'w';
    const request: AcquireRequest = {
      resources: [...resources].sort(),
      ttlMs,
      mode,
      slots: opts.permits ?? 1,
      // Without a wait budget the requests themselves still get time to reach a member.
      deadline: start + (opts.timeoutMs ?? Math.max(budget, 2 * this.options.requestTimeoutMs)),
      once: once || budget === 0,
      signal: opts.signal,
    };
    const pending = this.attemptUntilDone(request, start);
    this.attempting.add(pending);
    try {
      const won = await pending;
      return this.grant(resources, ttlMs, won, opts, mode, start);
    } finally {
      this.attempting.delete(pending);
    }
  }

  /** Attempts until one wins, contention outlasts the deadline, or the store is unreachable. */
  private async attemptUntilDone(request: AcquireRequest, start: number): Promise<Acquired> {
    for (let attempts = 1; ; attempts++) {
      try {
        return await acquireWithLease(this.context, request);
      } catch (err) {
        if (err instanceof LeaseGone && performance.now() < request.deadline && !this.closing) continue;
        if (err instanceof LeaseGone || err instanceof Contended || (err instanceof EtcdUnreachableError && err.tried === 0)) {
          const retryAfterMs = err instanceof Contended ? err.retryAfterMs : undefined;
          throw new LockNotAcquiredError({
            resources: request.resources,
            attempts,
            nodes: [{ node: this.transport.current, status: 'held', ...(retryAfterMs === undefined ? {} : { ttlMs: retryAfterMs }) }],
            retryAfterMs,
            waitedMs: performance.now() - start,
            reason:
              request.mode === 'p' ? `all ${request.slots} permits are in use (etcd queue)` : 'it is held by another owner (etcd queue)',
            ...(request.mode === 'p' ? { permits: request.slots } : {}),
          });
        }
        if (request.signal?.aborted && err === request.signal.reason) throw err;
        throw unavailable(request.resources, err, this.transport.labels);
      }
    }
  }

  /** Wraps a won acquisition in a core Lock; a lock won while closing is released at once. */
  private async grant(
    resources: readonly string[],
    ttlMs: number,
    won: Acquired,
    opts: UsingOptions,
    mode: QueueMode,
    start: number,
  ): Promise<Lock> {
    const byResource = new Map(won.keys.map((k, i) => [[...resources].sort()[i]!, k]));
    const keys = resources.map((r) => byResource.get(r)!);
    // A permit has no token (up to `permits` holders at once); a reader's only when asked for.
    const fenced = mode === 'w' || (mode === 'r' && opts.fencing === true);
    const lock = createLock(
      {
        resources,
        keys: keys.map((k) => k.key),
        value: won.leaseId,
        expiresAtMono: won.validUntil,
        ...(fenced ? { fencingTokens: new Map(resources.map((r, i) => [r, keys[i]!.revision])) } : {}),
        nodes: [{ node: this.transport.current, status: 'ok' }],
      },
      this.ops,
      mode === 'p' ? 'semaphore' : opts.mode,
    );
    this.active.set(lock, { keys, acquiredAt: performance.now() });
    if (this.closing) {
      lock.lose('released');
      await lock.release();
      throw new RedlockClosedError();
    }
    this.notify('acquired', () => ({
      resources,
      ttlMs,
      attempts: 1,
      durationMs: performance.now() - start,
      waitedMs: performance.now() - start,
      fencing: fenced,
      nodes: lock.acquireNodes,
      ...(mode === 'p' ? { primitive: 'semaphore' as const } : opts.mode ? { primitive: opts.mode } : {}),
    }));
    return lock;
  }
}
