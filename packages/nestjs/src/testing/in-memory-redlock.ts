import { randomBytes } from 'node:crypto';
import {
  checkAcquireOptions,
  checkTtl,
  Lock,
  LockNotAcquiredError,
  QuorumUnavailableError,
  normalizeResources,
  RedlockClosedError,
  RedlockEmitter,
  runWithLock,
  type AcquireOptions,
  type LockLostReason,
  type NodeOutcome,
  type UsingOptions,
} from '@redlock-nest/core';
import { InMemoryLockTable } from './in-memory-lock-table.js';

type LockInit = ConstructorParameters<typeof Lock>[0];
type LockOperations = ConstructorParameters<typeof Lock>[1];

/** The single "node" of the in-memory table, as it appears in node outcomes. */
const NODE = 'in-memory';

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

/**
 * A stand-in for the core `Redlock` with the same `acquire` / `tryAcquire` / `using` / `close`
 * contract, backed by an {@link InMemoryLockTable} instead of Redis. Hands out real core `Lock`
 * objects (signal, fencing token, extend, release), so code under test sees the same API, and
 * emits the same typed events (`acquire`, `wait`, `acquired`, `extend`, `lost`, `release`,
 * `failure`), so metrics and logging code built on them can be unit-tested too.
 * For unit tests only: it locks nothing across processes.
 */
export class InMemoryRedlock extends RedlockEmitter {
  /** The table; the testing service's helpers act on it directly. */
  readonly table = new InMemoryLockTable();
  /** Always 1: the table is one "node". */
  readonly quorum = 1;
  /** While true, every acquisition fails with `QuorumUnavailableError` (a simulated Redis outage). */
  unavailable = false;
  private readonly active = new Set<Lock>();
  private readonly ops: LockOperations;
  private closed = false;

  constructor(
    /** How long a contended acquisition waits when the call sets neither `retry: false` nor `timeoutMs`. */
    private readonly defaultWaitMs: number,
  ) {
    super();
    this.ops = {
      extend: async (lock, ttlMs) => {
        const start = performance.now();
        const ok = this.table.extend(lock.resources, lock.value, ttlMs);
        const nodes: NodeOutcome[] = [{ node: NODE, status: ok ? 'ok' : 'absent' }];
        const report = (error: string | undefined): void =>
          this.notify('extend', () => ({
            resources: lock.resources,
            ttlMs,
            ok: !error,
            durationMs: performance.now() - start,
            error,
            nodes,
          }));
        if (!ok) {
          const lost = lock.lose('not-owner', nodes);
          report(lost.name);
          throw lost;
        }
        lock.setExpiry(performance.now() + ttlMs);
        report(undefined);
      },
      release: async (lock) => {
        const start = performance.now();
        this.active.delete(lock);
        const released = this.table.release(lock.resources, lock.value) > 0 ? 1 : 0;
        const nodes: NodeOutcome[] = [{ node: NODE, status: released ? 'ok' : 'absent' }];
        this.notify('release', () => ({
          resources: lock.resources,
          heldMs: start - lock.acquiredAtMono,
          durationMs: performance.now() - start,
          released,
          nodes,
        }));
        return { released, nodes };
      },
      // Lock.fence(): owner-checked like the core's, from the same counters as fenced acquisitions.
      fence: async (lock) => {
        if (this.unavailable) {
          throw new QuorumUnavailableError({
            resources: lock.resources,
            attempts: 1,
            nodes: [{ node: NODE, status: 'error', error: 'simulated outage (RedlockTestingService.setUnavailable)' }],
            quorum: 1,
          });
        }
        if (lock.resources.some((r) => this.table.owner(r) !== lock.value)) {
          throw lock.lose('not-owner', [{ node: NODE, status: 'absent' }]);
        }
        return new Map(lock.resources.map((r) => [r, this.table.nextFence(r)]));
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
    };
  }

  /** The locks this instance holds now. */
  get activeLocks(): number {
    return this.active.size;
  }

  /**
   * Takes `resource` (or all of `resource[]`) in the table, waiting for a release up to
   * `timeoutMs` (default: the module's `defaultWaitMs`; none with `retry: false`).
   * @example
   * ```ts
   * const lock = await locks.redlock.acquire('order:1', 5_000);
   * ```
   */
  async acquire(resource: string | readonly string[], ttlMs: number, options: AcquireOptions = {}): Promise<Lock> {
    // The core's validators: the same rules and messages as the real Redlock.
    const resources = normalizeResources(resource);
    checkTtl(ttlMs);
    checkAcquireOptions(options);
    this.notify('acquire', () => ({ resources, ttlMs }));
    const start = performance.now();
    const progress = { attempts: 0, waitedMs: 0 };
    try {
      const lock = await this.attempts(resources, ttlMs, options, progress);
      this.notify('acquired', () => ({
        resources,
        ttlMs,
        attempts: progress.attempts,
        durationMs: performance.now() - start,
        waitedMs: progress.waitedMs,
        fencing: options.fencing === true,
        nodes: lock.acquireNodes,
      }));
      return lock;
    } catch (err) {
      this.notify('failure', () => ({
        resources,
        attempts: progress.attempts,
        durationMs: performance.now() - start,
        error: errorName(err),
        nodes: (err as { nodes?: readonly NodeOutcome[] } | null)?.nodes ?? [],
      }));
      throw err;
    }
  }

  private async attempts(
    resources: readonly string[],
    ttlMs: number,
    options: AcquireOptions,
    progress: { attempts: number; waitedMs: number },
  ): Promise<Lock> {
    const waitMs = options.retry === false ? 0 : (options.timeoutMs ?? this.defaultWaitMs);
    const deadline = performance.now() + waitMs;
    for (let attempt = 1; ; attempt++) {
      progress.attempts = attempt;
      options.signal?.throwIfAborted();
      if (this.closed) throw new RedlockClosedError();
      if (this.unavailable) {
        const nodes: NodeOutcome[] = [{ node: NODE, status: 'error', error: 'simulated outage (RedlockTestingService.setUnavailable)' }];
        throw new QuorumUnavailableError({ resources, attempts: attempt, nodes, quorum: 1 });
      }
      const token = randomBytes(16).toString('base64url');
      const taken = this.table.take(resources, token, ttlMs);
      if (taken.ok) return this.createLock(resources, token, ttlMs, options.fencing === true);
      const remaining = deadline - performance.now();
      if (remaining <= 0) {
        const nodes: NodeOutcome[] = [{ node: NODE, status: 'held', ttlMs: taken.retryAfterMs }];
        throw new LockNotAcquiredError({
          resources,
          attempts: attempt,
          nodes,
          retryAfterMs: taken.retryAfterMs,
          waitedMs: waitMs - remaining,
        });
      }
      const delayMs = Math.min(remaining, taken.retryAfterMs);
      this.notify('wait', () => ({
        resources,
        attempt,
        delayMs,
        retryAfterMs: taken.retryAfterMs,
        nodes: [{ node: NODE, status: 'held', ttlMs: taken.retryAfterMs }],
      }));
      const waitStart = performance.now();
      await this.waitForChange(delayMs, options.signal).finally(() => {
        progress.waitedMs += performance.now() - waitStart;
      });
    }
  }

  /**
   * One attempt: the lock, or `null` when the resource is held.
   * @example
   * ```ts
   * expect(await locks.redlock.tryAcquire('order:1', 5_000)).toBeNull();
   * ```
   */
  async tryAcquire(resource: string | readonly string[], ttlMs: number, options: AcquireOptions = {}): Promise<Lock | null> {
    try {
      return await this.acquire(resource, ttlMs, { ...options, retry: false });
    } catch (err) {
      if (err instanceof LockNotAcquiredError) return null;
      throw err;
    }
  }

  /**
   * Runs `routine` holding the lock, extended every `ttl/3`, released afterwards; rejects with
   * `LockLostError` when the lock was lost meanwhile, like the core's `using`.
   * @example
   * ```ts
   * await locks.redlock.using('order:1', 5_000, async (lock) => work(lock.signal));
   * ```
   */
  async using<T>(
    resource: string | readonly string[],
    ttlMs: number,
    routine: (lock: Lock) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    checkAcquireOptions(options, 'using options');
    const lock = await this.acquire(resource, ttlMs, options);
    return runWithLock(lock, ttlMs, options.maxHoldMs ?? Infinity, routine);
  }

  /** The lock this instance holds on `resource`, if any. */
  heldLock(resource: string): Lock | undefined {
    for (const lock of this.active) if (lock.resources.includes(resource)) return lock;
    return undefined;
  }

  /** Marks the lock held on `resource` as lost (its signal aborts) and frees its entries. */
  lose(resource: string, reason: LockLostReason): boolean {
    const lock = this.heldLock(resource);
    if (!lock) return false;
    for (const r of lock.resources) if (this.table.owner(r) === lock.value) this.table.drop(r);
    lock.lose(reason, [{ node: NODE, status: 'absent' }]);
    return true;
  }

  /** Releases every held lock (aborting their signals). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const held = [...this.active];
    for (const lock of held) lock.lose('released');
    await Promise.all(held.map((lock) => lock.release()));
  }

  private createLock(resources: readonly string[], token: string, ttlMs: number, fencing: boolean): Lock {
    const init: LockInit = {
      resources,
      keys: resources.map((r) => `${NODE}:lock:${r}`),
      value: token,
      expiresAtMono: performance.now() + ttlMs,
      nodes: [{ node: NODE, status: 'ok' }],
      ...(fencing ? { fencingTokens: new Map(resources.map((r) => [r, this.table.nextFence(r)])) } : {}),
    };
    const lock = new Lock(init, this.ops);
    this.active.add(lock);
    return lock;
  }

  /** Waits for a table change, at most `ms`; rejects with the signal's reason on abort. */
  private async waitForChange(ms: number, signal: AbortSignal | undefined): Promise<void> {
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop.abort(), ms);
    try {
      await this.table.changed(stop.signal);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    signal?.throwIfAborted();
  }
}
