import { RedlockArgumentError, RedlockClosedError } from '@redlock-nest/core';
import { checkCluster, type EtcdClusterCheck } from './cluster-check.js';
import { EtcdTransport } from './http-transport.js';
import { unavailable } from './lock-ops.js';
import { forceReleaseResource, inspectResource, type EtcdForceReleaseResult, type EtcdLockInspection } from './lock-inspection.js';
import { resolveEtcdOptions, type EtcdLocksOptions, type ResolvedEtcdOptions } from './options.js';

/**
 * The operators' tools on the etcd engine's locks, without holding any: who holds a resource
 * and who waits, a forced release of a stuck holder, and a check of the cluster. The
 * `redlock-nest` CLI runs them with `--etcd` (or `REDLOCK_ETCD`). Takes the options of
 * {@link EtcdLocks}: the same hosts, key prefix, TLS and auth.
 *
 * @example
 * ```ts
 * const operator = new EtcdOperator({ hosts: ['http://etcd-a:2379', 'http://etcd-b:2379', 'http://etcd-c:2379'] });
 * const state = await operator.inspect('order:42');
 * if (state.holder) await operator.forceRelease('order:42', { reason: 'worker host died, INC-1234' });
 * await operator.close();
 * ```
 */
export class EtcdOperator {
  readonly options: ResolvedEtcdOptions;
  private readonly transport: EtcdTransport;
  private closed = false;

  constructor(options: EtcdLocksOptions) {
    this.options = resolveEtcdOptions(options);
    this.transport = new EtcdTransport(this.options);
  }

  /**
   * The resource's lock queue (plain, read and write locks) and semaphore queue, oldest first:
   * owner hashes, tokens (create revisions), leases' TTLs, and who holds.
   * @throws {QuorumUnavailableError} no member answered with a leader in time.
   * @example
   * ```ts
   * const { holder, lock } = await operator.inspect('order:42');
   * ```
   */
  async inspect(resource: string): Promise<EtcdLockInspection> {
    this.assertUsable(resource, 'inspect');
    return this.named(resource, inspectResource(this.transport, this.options.keyPrefix, resource, this.deadline()));
  }

  /**
   * Frees a stuck lock: revokes its holders' leases (their keys go in one revision; the next
   * waiter is granted with a greater fencing token; the old holder's next keep-alive fails and
   * its `lock.signal` aborts). The revoked leases' other resources are freed too (a
   * multi-resource lock is one lease): the result names them. Use it only on a holder that is
   * gone or writes through a fenced store.
   * @throws {RedlockArgumentError} without a non-empty `reason`.
   * @throws {QuorumUnavailableError} no member answered with a leader in time.
   * @example
   * ```ts
   * await operator.forceRelease('cron:daily-report', { reason: 'worker host died, INC-1234' });
   * ```
   */
  async forceRelease(resource: string, options: { readonly reason: string }): Promise<EtcdForceReleaseResult> {
    this.assertUsable(resource, 'forceRelease');
    const reason = (options as { reason?: unknown } | null | undefined)?.reason;
    if (typeof reason !== 'string' || reason.trim() === '') {
      throw new RedlockArgumentError('forceRelease(resource, { reason }) needs a non-empty reason: say why, for the record.');
    }
    return this.named(resource, forceReleaseResource(this.transport, this.options.keyPrefix, resource, this.deadline()));
  }

  /**
   * Checks every member and the cluster (see {@link EtcdClusterCheck}). Never rejects for an
   * unreachable member: that is a finding.
   * @example
   * ```ts
   * const { ok, findings } = await operator.check();
   * ```
   */
  async check(): Promise<EtcdClusterCheck> {
    if (this.closed) throw new RedlockClosedError();
    return checkCluster(this.transport, this.options.requestTimeoutMs);
  }

  /** Closes the connections. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.transport.close();
  }

  /** The core's error for an unreachable cluster, naming the resource and every member. */
  private async named<T>(resource: string, pending: Promise<T>): Promise<T> {
    try {
      return await pending;
    } catch (err) {
      throw unavailable([resource], err, this.transport.labels);
    }
  }

  /** Every member gets one request timeout, as a lock operation does. */
  private deadline(): number {
    return performance.now() + this.options.requestTimeoutMs * this.options.hosts.length;
  }

  private assertUsable(resource: unknown, what: string): void {
    if (this.closed) throw new RedlockClosedError();
    if (typeof resource !== 'string' || resource === '') {
      throw new RedlockArgumentError(`${what}(resource) needs a non-empty resource name, got ${JSON.stringify(resource)}.`);
    }
  }
}
