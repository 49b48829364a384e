import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { Redlock, RedlockArgumentError, type LockEngine } from '@redlock-nest/core';
import { listLocks, type ListedLock, type LockListing } from '@redlock-nest/core/operator';
import { probeNode, type NodeHealth } from '../health/node-probe.js';
import type { RedlockService } from '../service/redlock.service.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { EventTimeline, type TimelineSnapshot } from './event-timeline.js';

/** One node as the dashboard shows it. */
export interface DashboardNode extends NodeHealth {
  /** The restart rule's view: `off` (not enabled), `counts`, or why the node is kept out of quorums now. */
  readonly restartRule: string;
}

/** What the data endpoint returns. */
export interface DashboardSnapshot {
  /** Wall-clock time of the snapshot, epoch ms. */
  readonly at: number;
  /** Nodes needed for a majority, when the engine is a Redlock. */
  readonly quorum?: number;
  readonly nodes: readonly DashboardNode[];
  readonly locks: readonly ListedLock[];
  /** How the listing went: `truncated` when the SCAN page limit stopped it; nodes it could not list. */
  readonly listing: { readonly truncated: boolean; readonly errors: ReadonlyArray<{ readonly node: string; readonly error: string }> };
  readonly timeline: TimelineSnapshot;
  readonly allowForceRelease: boolean;
  readonly refreshMs: number;
}

/** Who asked for a force release, for the log. */
export interface Operator {
  readonly ip: string | undefined;
  readonly user: string | undefined;
}

/** The result of a force release, as the endpoint returns it. */
export interface DashboardRelease {
  readonly resource: string;
  /** Short hash of the owner that held it on a quorum before, if any. */
  readonly holder?: string;
  readonly released: number;
  /** The fencing counter after the release: the old holder's token is below it. */
  readonly fencingCounter: string;
}

/**
 * Gathers what the dashboard shows from the nodes (probes and a bounded SCAN, only when a page
 * asks) and from the engine's events (listened to only while a page is open).
 */
export class DashboardData implements OnModuleDestroy {
  readonly timeline: EventTimeline;
  private readonly logger = new Logger('RedlockDashboard');

  constructor(
    private readonly service: RedlockService,
    private readonly options: ResolvedDashboardOptions,
  ) {
    // Listen a while past the last poll: a page that missed one poll keeps its timeline.
    this.timeline = new EventTimeline(this.engine, options.timelineSize, Math.max(30_000, options.refreshMs * 5));
  }

  private get engine(): LockEngine {
    return this.service.redlock;
  }

  /** Nodes, locks held and recent events, now. */
  async snapshot(): Promise<DashboardSnapshot> {
    this.timeline.touch();
    const engine = this.engine;
    const base = { allowForceRelease: this.options.allowForceRelease, refreshMs: this.options.refreshMs };
    if (!(engine instanceof Redlock)) {
      const health = engine.probeHealth ? await engine.probeHealth(1_000) : undefined;
      return {
        ...base,
        at: Date.now(),
        nodes: (health?.nodes ?? []).map((n) => ({ ...n, restartRule: 'off' })),
        locks: [],
        listing: { truncated: false, errors: [{ node: '*', error: 'locks are listed on Redis nodes only' }] },
        timeline: this.timeline.snapshot(),
      };
    }
    const timeoutMs = engine.options.nodeTimeoutMs * 4;
    const health = await Promise.all(engine.nodes.map((node) => probeNode(node, timeoutMs)));
    // A node that did not answer the probe is not scanned: its commands would only queue up.
    const up = engine.nodes.filter((_, i) => health[i]!.status === 'up');
    const listing: LockListing = await listLocks(
      { nodes: up, quorum: engine.quorum, keyNames: engine.keyNames, options: engine.options },
      { ...this.options.scan, timeoutMs },
    );
    const nodes = health.map((h, i): DashboardNode => {
      const rule = engine.restarts;
      return { ...h, restartRule: rule ? (rule.excluded(engine.nodes[i]!) ?? 'counts') : 'off' };
    });
    return {
      ...base,
      at: Date.now(),
      quorum: engine.quorum,
      nodes,
      locks: listing.locks,
      listing: { truncated: listing.truncated, errors: listing.nodes.flatMap((n) => (n.error ? [{ node: n.node, error: n.error }] : [])) },
      timeline: this.timeline.snapshot(),
    };
  }

  /**
   * Frees `resource` with the core's operator API (raising its fencing counter past every token
   * handed out) and logs who did it and whose lock it was.
   * @throws {RedlockArgumentError} when the engine is not a Redlock.
   */
  async forceRelease(resource: string, operator: Operator): Promise<DashboardRelease> {
    const engine = this.engine;
    if (!(engine instanceof Redlock)) {
      throw new RedlockArgumentError('force release needs the Redis engine (a Redlock); use the engine’s own tools for others.');
    }
    const who = `${operator.user ?? 'anonymous'} from ${operator.ip ?? 'unknown address'}`;
    const before = await engine.inspect(resource);
    const result = await engine.forceRelease(resource, { reason: `dashboard: force release by ${who}` });
    const fencingCounter = String(result.fencingCounter);
    // JSON quoting: a resource name cannot forge a log line.
    this.logger.warn(
      `force-released ${JSON.stringify(resource)} by ${who}: holder ${before.holder ?? 'none'}, ` +
        `released on ${result.released} node(s), fencing counter now ${fencingCounter} (tokens below it are stale)`,
    );
    return { resource, ...(before.holder ? { holder: before.holder } : {}), released: result.released, fencingCounter };
  }

  onModuleDestroy(): void {
    this.timeline.stop();
  }
}
