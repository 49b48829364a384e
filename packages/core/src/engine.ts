import { Lock, type LockOperations } from './lock/lock.js';
import type { LockInit } from './lock/lock-types.js';
import type { RedlockEventName, RedlockListener } from './observability/events.js';
import type { NodeReport } from './safety/independence.js';
import type { CheckNodesOptions, NodeCheckReport } from './safety/node-check.js';
import type { AcquireOptions, UsingOptions } from './options/options.js';
import { labelLock, type PrimitiveLabel } from './primitives/primitive-label.js';

export type { LockOperations } from './lock/lock.js';
export type { LockInit } from './lock/lock-types.js';

/**
 * What a lock engine offers: the surface the NestJS layer (decorators, guard, interceptor,
 * `RedlockService`) and applications rely on, whatever stores the locks. The core's `Redlock`
 * (a quorum of independent Redis nodes) implements it, and so does `EtcdLocks` of
 * `@redlock-nest/etcd` (an etcd v3 cluster). Every engine speaks the same options
 * (`timeoutMs`, `signal`, `mode`, `permits`, `fencing`, `maxHoldMs`) and throws the core's
 * error classes: `LockNotAcquiredError` when contended, `QuorumUnavailableError` when its
 * store is unreachable, `LockLostError` as a lost lock's `signal.reason`, `RedlockArgumentError`
 * for bad input, `RedlockClosedError` once closed.
 *
 * The optional members are capabilities only some engines have; callers test for them.
 *
 * @example
 * ```ts
 * async function runReport(engine: LockEngine): Promise<void> {
 *   await engine.using('report:daily', 10_000, async (lock) => buildReport({ signal: lock.signal }));
 * }
 * await runReport(new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']));
 * ```
 */
export interface LockEngine {
  /** Acquires `resource` (or all of `resource[]` together, all or nothing) for `ttlMs`, waiting while it is held. */
  acquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock>;
  /** One attempt: the lock, or `null` when someone else holds it. */
  tryAcquire(resource: string | readonly string[], ttlMs: number, options?: AcquireOptions): Promise<Lock | null>;
  /** Runs `routine` holding the lock, kept alive meanwhile, released afterwards; rejects with `LockLostError` if it was lost. */
  using<T>(
    resource: string | readonly string[],
    ttlMs: number,
    routine: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T>;
  /** Releases every lock still held (aborting their signals) and closes what the engine opened. Idempotent. */
  close(): Promise<void>;
  /** Subscribes to the lock events (`acquired`, `release`, `lost`, ...). Returns the unsubscribe function. */
  on<E extends RedlockEventName>(event: E, listener: RedlockListener<E>): () => void;
  /** Whether the configured servers are independent (Redlock: no replica, no server listed twice). */
  checkIndependence?(): Promise<NodeReport[]>;
  /** What can silently break locks on the configured servers, as findings with fixes. */
  checkNodes?(options?: CheckNodesOptions): Promise<NodeCheckReport>;
  /** Probes every server for a health check. Never rejects: a server that fails is `down`. */
  probeHealth?(timeoutMs: number): Promise<EngineHealth>;
  /** A TTL this process will use, known before it is used (Redlock: see its restart rule's declared TTL). */
  declareTtl?(ttlMs: number): void;
}

/** One server as a health probe saw it. Carries the server's label only, never credentials. */
export interface EngineMemberHealth {
  /** `host:port` of the server. */
  readonly node: string;
  readonly status: 'up' | 'down';
  /** Round-trip time of the probe, when the server answered. */
  readonly latencyMs?: number;
  /** The server's role: `master` or `slave` on Redis, `leader` or `follower` on etcd. */
  readonly role?: string;
  /** The raft index the server has applied (consensus stores only). */
  readonly raftIndex?: string;
  /** The server's version, when it reports one. */
  readonly version?: string;
  /** Why the server is down. */
  readonly error?: string;
}

/** What an engine's health probe found. */
export interface EngineHealth {
  /** Servers needed for a lock (a majority). */
  readonly quorum: number;
  /** Servers that answered and can take part in a lock. */
  readonly reachable: number;
  /** Whether the servers agree on a leader (consensus stores); absent where there is none. */
  readonly leader?: string;
  readonly nodes: readonly EngineMemberHealth[];
}

/**
 * Builds a core {@link Lock} for an engine outside the core: the Lock keeps its validity timer,
 * `signal`, `release()` idempotence and printing, and delegates extend, release and fence to `ops`.
 * `primitive` marks a read or write lock or a semaphore permit (see `primitiveOf`), so the Nest
 * layer's reentrancy rules treat it as on Redis.
 *
 * @example
 * ```ts
 * const lock = createLock(
 *   { resources: ['order:42'], keys: ['locks/order:42/1a2b'], value: leaseId, expiresAtMono: performance.now() + 9_900 },
 *   { extend: (l, ttlMs) => keepAlive(l, ttlMs), release: (l) => revoke(l) },
 * );
 * ```
 */
export function createLock(init: LockInit, ops: LockOperations, primitive?: PrimitiveLabel): Lock {
  const lock = new Lock(init, ops);
  if (primitive) labelLock(lock, primitive);
  return lock;
}
