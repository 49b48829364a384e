import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { Redlock, RedlockArgumentError, type LockEngine } from '@redlock-nest/core';
import type { NodeFinding } from '@redlock-nest/core/operator';
import { RedlockService } from '../service/redlock.service.js';
import { canLock, probeNode, type NodeHealth } from './node-probe.js';

/** Options of {@link RedlockHealthIndicator.isHealthy}. */
export interface RedlockHealthOptions {
  /** How long each node may take to answer (connecting included). Default {@link DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /**
   * Also run `redlock.checkNodes()` (persistence, eviction policy, clock rate, ACL, ...) and
   * report its warn and error findings; an error finding makes the status `degraded`.
   * Costs about half a second per call (the clock-rate sample): for a readiness or status
   * page, not a tight liveness probe. Default false.
   */
  readonly checks?: boolean;
}

/** Default per-node probe timeout: long enough for a cold connect, short enough for a liveness probe. */
export const DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS = 1_000;

/** What the indicator reports under its key, besides `status`. */
export interface RedlockHealthDetails {
  /** Nodes needed for a lock. */
  readonly quorum: number;
  /** The leader the members agree on (engines on a consensus store, such as etcd). */
  readonly leader?: string;
  /** Nodes that answered and can hold locks (masters). */
  readonly reachable: number;
  readonly nodes: readonly NodeHealth[];
  /** With `checks: true`: the warn and error findings of `checkNodes()` (labels only, never credentials). */
  readonly findings?: readonly NodeFinding[];
}

/**
 * A `@nestjs/terminus` health indicator for the lock nodes: each node's state, latency and role,
 * and whether a quorum can be reached. `up` when every node can lock, `degraded` when some cannot
 * but a quorum still can (locks work, fault tolerance is reduced; HTTP stays 200), `down` when no
 * quorum is reachable (every lock fails with `QuorumUnavailableError`; the health check answers 503).
 *
 * Import it from `@redlock-nest/nestjs/health`, so apps without terminus never load terminus.
 *
 * @example
 * ```ts
 * @Controller('health')
 * export class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly redlock: RedlockHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.redlock.isHealthy('redlock')]);
 *   }
 * }
 * // {"status":"ok","info":{"redlock":{"status":"up","quorum":2,"reachable":3,
 * //   "nodes":[{"node":"redis-a:6379","status":"up","latencyMs":0.41,"role":"master"}, ...]}}, ...}
 * ```
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(
    @Inject(HealthIndicatorService) private readonly indicators: HealthIndicatorService,
    @Inject(RedlockService) private readonly locks: RedlockService,
  ) {}

  /**
   * Probes every node in parallel (an `INFO replication` each, no lock traffic).
   * @example
   * ```ts
   * this.health.check([() => this.redlock.isHealthy('locks', { timeoutMs: 500 })]);
   * ```
   */
  async isHealthy<const Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
    options: RedlockHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.indicators.check(key);
    const details = await this.inspect(options);
    const data = { ...details, nodes: [...details.nodes] };
    if (details.reachable < details.quorum) return session.down(data);
    if (details.reachable < details.nodes.length) return session.degraded(data);
    if (details.findings?.some((f) => f.level === 'error')) return session.degraded(data);
    return session.up(data);
  }

  /**
   * The same facts without terminus' result shape, e.g. for a custom status page.
   * @example
   * ```ts
   * const { reachable, quorum } = await indicator.inspect();
   * ```
   */
  async inspect(options: RedlockHealthOptions = {}): Promise<RedlockHealthDetails> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS;
    const engine = this.locks.redlock;
    const [details, report] = await Promise.all([
      probeEngine(engine, timeoutMs),
      options.checks && engine.checkNodes ? engine.checkNodes() : undefined,
    ]);
    return report ? { ...details, findings: report.findings.filter((f) => f.level !== 'ok') } : details;
  }
}

/** The engine's own probe when it has one (etcd: members, leader, raft index); a Redlock's nodes by `INFO replication`. */
async function probeEngine(engine: LockEngine, timeoutMs: number): Promise<RedlockHealthDetails> {
  if (engine.probeHealth) {
    const health = await engine.probeHealth(timeoutMs);
    return { ...health, nodes: [...health.nodes] };
  }
  if (!(engine instanceof Redlock)) {
    throw new RedlockArgumentError(
      `RedlockHealthIndicator cannot probe this lock engine (${engine.constructor.name}): it has no probeHealth(timeoutMs) method.`,
    );
  }
  const nodes = await Promise.all(engine.nodes.map((node) => probeNode(node, timeoutMs)));
  return { quorum: engine.quorum, reachable: nodes.filter(canLock).length, nodes };
}
