import { Redlock, type AcquireOptions, type Lock, type LockLostReason, type UsingOptions } from '@redlock-nest/core';
import { InMemoryRedisServer } from '@redlock-nest/core/testing';

/** The testing module's nodes: three, so a quorum is 2 and one node can be down, slow or restarted. */
export const IN_MEMORY_NODES = 3;

function inMemoryServers(count: number): InMemoryRedisServer[] {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`nodes must be a whole number ≥ 1, got ${String(count)}`);
  return Array.from({ length: count }, (_, i) => new InMemoryRedisServer({ name: `in-memory-${i}` }));
}

/**
 * The core `Redlock` over in-memory nodes ({@link InMemoryRedisServer}): the same algorithm,
 * validation, events, watchdog, release notices and fencing as in production, without Redis.
 * Adds what a test needs: the nodes themselves (stop, slow down, restart one), the locks this
 * instance holds, and a default wait for calls that do not say how long to wait.
 * For unit tests only: it locks nothing across processes.
 *
 * @example
 * ```ts
 * const redlock = new InMemoryRedlock(0);
 * redlock.servers[0]!.stop(); // one node down: locks still take 2 of 3
 * await redlock.using('order:1', 5_000, async (lock) => work(lock.signal));
 * await redlock.close();
 * ```
 */
export class InMemoryRedlock extends Redlock {
  /** The in-memory nodes, in the order of the outcomes in errors and events. */
  readonly servers: readonly InMemoryRedisServer[];
  private readonly held = new Set<Lock>();
  private heldWaiters: Array<() => void> = [];

  constructor(
    /** How long a contended acquisition waits when the call sets neither `retry` nor `timeoutMs`. */
    private readonly defaultWaitMs: number,
    nodes: number | readonly InMemoryRedisServer[] = IN_MEMORY_NODES,
  ) {
    const servers = typeof nodes === 'number' ? inMemoryServers(nodes) : [...nodes];
    // Node down/back warnings are what a test simulates on purpose: not printed.
    super(
      servers.map((s) => s.client()),
      { onWarning: () => undefined },
    );
    this.servers = servers;
    // Woken by the event, not by onHeld: a test acting on the lock it awaited then sees the
    // events in production's order ('acquired' before what the test causes).
    this.on('acquired', () => {
      const waiters = this.heldWaiters;
      this.heldWaiters = [];
      for (const notify of waiters) notify();
    });
  }

  /** While true, every node refuses connections: acquisitions fail with `QuorumUnavailableError`. */
  get unavailable(): boolean {
    return this.servers.every((s) => !s.up);
  }

  set unavailable(down: boolean) {
    for (const s of this.servers) {
      if (down) s.stop();
      else s.start();
    }
  }

  /**
   * `Redlock.acquire`, waiting `defaultWaitMs` when contended unless the call says otherwise.
   * @example
   * ```ts
   * const lock = await redlock.acquire('order:1', 5_000);
   * ```
   */
  override acquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock> {
    return super.acquire(resource, ttlMs, this.withDefaultWait(options));
  }

  /**
   * `Redlock.using`, waiting `defaultWaitMs` when contended unless the call says otherwise.
   * @example
   * ```ts
   * await redlock.using('order:1', 5_000, async (lock) => work(lock.signal));
   * ```
   */
  override using<T>(
    resource: string | readonly string[],
    ttlMs: number,
    routine: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T> {
    return super.using(resource, ttlMs, routine, this.withDefaultWait(options));
  }

  /** The lock this instance holds on `resource`, if any (not released, not lost). */
  heldLock(resource: string): Lock | undefined {
    for (const lock of this.held) {
      if (lock.released || lock.signal.aborted) this.held.delete(lock);
      else if (lock.resources.includes(resource)) return lock;
    }
    return undefined;
  }

  /** Resolves at the next lock this instance wins (its 'acquired' event); rejects with the signal's reason on abort. */
  nextHeld(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const onAbort = (): void => {
        this.heldWaiters = this.heldWaiters.filter((w) => w !== done);
        reject(signal!.reason as Error);
      };
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.heldWaiters.push(done);
    });
  }

  /** Whether `resource`'s lock key is on a majority of the nodes (held by anyone). */
  isHeld(resource: string): boolean {
    const key = this.lockKey(resource);
    return this.servers.filter((s) => s.get(key) !== undefined).length >= this.quorum;
  }

  /**
   * Writes `owner`'s lock on `resources` on every running node, as another process would; false
   * (nothing written) when one of them is already held.
   */
  holdAs(resources: readonly string[], owner: string, ttlMs: number): boolean {
    if (resources.some((r) => this.isHeld(r))) return false;
    for (const s of this.servers) if (s.up) for (const r of resources) s.set(this.lockKey(r), owner, ttlMs);
    return true;
  }

  /** Whether `owner` holds every one of `resources` on a majority of the nodes. */
  heldAs(resources: readonly string[], owner: string): boolean {
    return resources.every((r) => this.servers.filter((s) => s.get(this.lockKey(r)) === owner).length >= this.quorum);
  }

  /** Deletes `owner`'s keys of `resources` on every node, publishing the release as the release script does. */
  releaseAs(resources: readonly string[], owner: string): void {
    for (const s of this.servers) {
      for (const r of resources) if (s.get(this.lockKey(r)) === owner) s.delete(this.lockKey(r), true);
    }
  }

  /**
   * Marks the lock held on `resource` as lost (its signal aborts) after deleting its keys on
   * every node, as an expiry would.
   */
  lose(resource: string, reason: LockLostReason): boolean {
    const lock = this.heldLock(resource);
    if (!lock) return false;
    this.releaseAs(lock.resources, lock.value);
    lock.lose(
      reason,
      this.servers.map((s) => ({ node: s.name, status: 'absent' as const })),
    );
    return true;
  }

  /** Forgets every key and fencing counter on every node and ends a simulated outage. */
  reset(): void {
    for (const s of this.servers) {
      s.start();
      s.slow(0);
      s.clear();
    }
  }

  /** Releases every held lock, then closes the nodes' connections. Idempotent. */
  override async close(): Promise<void> {
    await super.close();
    for (const s of this.servers) s.close();
  }

  protected override onHeld(lock: Lock): void {
    this.held.add(lock);
  }

  private withDefaultWait<O extends AcquireOptions>(options: O | undefined): O | AcquireOptions {
    if (options && (options.retry !== undefined || options.timeoutMs !== undefined)) return options;
    return { ...options, timeoutMs: this.defaultWaitMs };
  }
}
