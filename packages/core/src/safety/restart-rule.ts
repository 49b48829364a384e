/**
 * The restart rule of the Redis distributed-locks page ("Redlock"), enforced by the client:
 * a node that restarted without its data must not take part in a quorum until the
 * longest TTL in use has passed since the restart, or it could grant a lock another
 * client still holds (Martin Kleppmann's "How to do distributed locking" walks through
 * that second holder). The page asks operators for a delayed restart; this does the same
 * from the client's side, so it holds even when nobody configured it.
 *
 * Detection costs one `INFO` per (re)connect of a node's connection, nothing per lock
 * operation: the connection's 'ready' event triggers it, and Redis answers one
 * connection's commands in order, so the verdict is known before any lock command sent
 * on the new connection is answered.
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import { syncsReplicas } from '../nodes/replica-sync.js';
import type { LockNode } from '../nodes/lock-node.js';
import { escapeGlob, fsyncAlways, greater, infoField, readCounters, type CommandClient } from '../nodes/node-commands.js';
import { raiseFenceOnNode } from '../scripts/fence-raise.js';
import { NodeRestartedError } from '../errors/node-outcome.js';

/** What the rule needs of its Redlock. */
export interface RestartRuleOptions {
  /** Prefix of the lock and fencing keys (`<prefix>fence:*` are raised after a restart). */
  readonly keyPrefix: string;
  /** The largest TTL any client of these nodes uses; 0: the largest this Redlock has used. */
  readonly maxTtlMs: number;
  readonly onWarning: (message: string) => void;
}

class NodeState {
  runId: string | undefined;
  /** Monotonic time the server process started, rounded later (so the quarantine is never short). */
  startedAtMono = -Infinity;
  /**
   * Restarted while TTLs were in use: out until `startedAtMono` + the largest TTL in use.
   * Decided when the connection is checked, with the largest TTL in use then.
   */
  quarantined = false;
  /** AOF with appendfsync always: it keeps what it acknowledged across a restart. */
  persistent = false;
  /** INFO is not allowed to this user: the rule cannot be enforced on this node. */
  blind = false;
  /** The check of the current connection, while it runs. */
  checking: Promise<void> | undefined;
  /** Why the last check failed; the node does not count until a check succeeds. */
  failed: string | undefined;
  /** Restarted without its data: its fencing counters must be raised from the others first. */
  needsSync = false;
  syncing = false;
  /** A failed raise was reported (once per restart, not once per lock operation). */
  syncWarned = false;
  generation = 0;
}

/**
 * Tracks, per node, when its server last started and whether it keeps its data, and says
 * whether a node's answer counts toward a quorum. One per Redlock.
 */
export class RestartRule {
  private largestTtlMs = 0;
  private readonly states = new Map<LockNode, NodeState>();
  private readonly detach: Array<() => void> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private warnedBlind = false;

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly options: RestartRuleOptions,
  ) {
    for (const node of nodes) {
      // A Redis Cluster node answers INFO from any of its masters: per-connection restart detection does not apply.
      if (isClusterClient(node.client)) continue;
      const state = new NodeState();
      this.states.set(node, state);
      const onReady = (): void => this.check(node, state);
      node.client.on?.('ready', onReady);
      this.detach.push(() => (node.client as CommandClient).removeListener?.('ready', onReady));
      if (node.client.status === 'ready') this.check(node, state);
    }
  }

  /** The largest TTL in use: the configured one, or the largest this Redlock has asked for. */
  get maxTtlMs(): number {
    return Math.max(this.options.maxTtlMs, this.largestTtlMs);
  }

  /** Called before every acquire and extend round with its TTL. */
  noteTtl(ttlMs: number): void {
    if (ttlMs > this.largestTtlMs) this.largestTtlMs = ttlMs;
  }

  /**
   * Passes `node`'s reply through when the node counts; otherwise rejects with why, so the
   * round classifies it as an `error` (not granted; an acquire's possible hold is released,
   * and a fencing increment is raised to the issued token like any failed node's).
   */
  gate<T>(node: LockNode, sent: Promise<T>): Promise<T> {
    return sent.then((reply) => {
      const state = this.states.get(node);
      if (!state) return reply;
      if (state.checking) return state.checking.then(() => this.verdict(node, reply));
      return this.verdict(node, reply);
    });
  }

  /** Why `node` does not count right now, or undefined when it does. */
  excluded(node: LockNode): string | undefined {
    return this.exclusion(node)?.why;
  }

  /** Why `node` does not count right now and, during its restart window, in how many ms it will. */
  private exclusion(node: LockNode): { why: string; countsInMs?: number } | undefined {
    const state = this.states.get(node);
    if (!state) return undefined;
    if (state.failed !== undefined) return { why: `its restart check failed (${state.failed}); it counts again once INFO answers` };
    if (state.blind || state.persistent) return undefined;
    const now = performance.now();
    const countsAt = state.startedAtMono + this.maxTtlMs;
    if (state.quarantined && now < countsAt) {
      this.sync(node, state);
      const ago = Math.round(now - state.startedAtMono);
      const countsInMs = Math.ceil(countsAt - now);
      const why = `restarted ${ago} ms ago without durable persistence: its grants count again in ${countsInMs} ms (the restart rule: the largest TTL in use, ${this.maxTtlMs} ms, must pass first)`;
      return { why, countsInMs };
    }
    if (state.needsSync) {
      // The window is over: with no node left to raise the counters from, it counts as it is.
      this.sync(node, state, true);
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- sync() may have cleared it
      if (!state.needsSync) return undefined;
      return { why: 'restarted without its data: its fencing counters are being raised from the other nodes' };
    }
    state.quarantined = false;
    return undefined;
  }

  /** Stops listening and drops pending retries. */
  close(): void {
    this.closed = true;
    for (const off of this.detach.splice(0)) off();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private verdict<T>(node: LockNode, reply: T): T {
    const out = this.exclusion(node);
    if (out !== undefined) throw new NodeRestartedError(out.why, out.countsInMs);
    return reply;
  }

  /** Reads run_id, uptime and persistence of the connection that just became ready. */
  private check(node: LockNode, state: NodeState): void {
    if (this.closed) return;
    const generation = ++state.generation;
    // On a first connection with no configured maxTtlMs, no answer could keep the node out
    // (see below): a failed check then must not either, or a slow INFO would cost availability.
    const verdictFree = state.runId === undefined && this.options.maxTtlMs === 0;
    const run = this.inspect(node).then(
      (found) => {
        if (generation !== state.generation) return;
        if (found === 'blind') {
          state.blind = true;
          state.failed = undefined;
          this.warnBlind(node);
          return;
        }
        const firstSight = state.runId === undefined;
        const restarted = !firstSight && found.runId !== state.runId;
        // A reconnect to the same server (same run_id) changes nothing: it did not restart.
        const stillOut = !firstSight && !restarted && state.quarantined;
        state.blind = false;
        state.failed = undefined;
        state.runId = found.runId;
        state.startedAtMono = found.startedAtMono;
        state.persistent = found.persistent;
        // A changed run_id is a restart. On the first connection to a node its run_id is
        // new, so an uptime below the largest TTL in use counts as a restart; this Redlock
        // has no lock there yet, so only the configured restartRule.maxTtlMs applies (a
        // freshly started deployment is not held back by the TTL of the first acquisition).
        const young = firstSight && performance.now() < found.startedAtMono + this.options.maxTtlMs;
        state.quarantined = !found.persistent && (restarted || young || stillOut);
        if (restarted || young) {
          state.needsSync = !found.persistent;
          state.syncWarned = false;
          this.sync(node, state);
        }
      },
      (err: unknown) => {
        if (generation !== state.generation) return;
        if (!verdictFree) state.failed = err instanceof Error ? err.message : String(err);
        // Asked again while the connection stays up; a new connection asks anyway.
        if (node.client.status === 'ready') this.later(() => this.check(node, state), 200);
      },
    );
    state.checking = run.finally(() => {
      if (generation === state.generation) state.checking = undefined;
    });
  }

  private async inspect(node: LockNode): Promise<'blind' | { runId: string; startedAtMono: number; persistent: boolean }> {
    let info: string;
    try {
      info = await node.client.info('default');
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOPERM')) return 'blind';
      throw err;
    }
    // uptime_in_seconds is rounded down: the server started at least this long ago, so
    // taking "now minus uptime" as its start never shortens the quarantine.
    const startedAtMono = performance.now() - Number(infoField(info, 'uptime_in_seconds') ?? 0) * 1_000;
    const runId = infoField(info, 'run_id') ?? '';
    // With replicaSync, a replica promoted by a failover (it has a second replication id)
    // holds every grant that counted: it keeps its data like a durable restart does.
    const promoted = syncsReplicas(node) && Number(infoField(info, 'second_repl_offset') ?? -1) > 0;
    const persistent = promoted || (infoField(info, 'aof_enabled') === '1' && (await fsyncAlways(node)));
    return { runId, startedAtMono, persistent };
  }

  private warnBlind(node: LockNode): void {
    if (this.warnedBlind) return;
    this.warnedBlind = true;
    this.options.onWarning(
      `${node.label} refuses INFO (NOPERM): restarts of this node cannot be detected, so the restart rule is not enforced on it. Grant +info to the lock user.`,
    );
  }

  /**
   * Raises the restarted node's fencing counters to the largest value any counting node
   * holds (found with SCAN), so a token handed out once it counts again is above every
   * token handed out before the restart. Retried on the next look at the node if it fails.
   */
  private sync(node: LockNode, state: NodeState, windowOver = false): void {
    if (!state.needsSync || state.syncing || this.closed) return;
    const sources = this.nodes.filter((other) => {
      if (other === node) return false;
      const s = this.states.get(other);
      // A node not connected now cannot be read (its counters come back with it, or never).
      const connected = other.client.status === undefined || other.client.status === 'ready';
      return s !== undefined && !s.needsSync && s.failed === undefined && !s.checking && connected;
    });
    if (sources.length === 0) {
      // Every node lost its data: no counter survives anywhere to raise it from.
      if (this.nodes.every((other) => other === node || (this.states.get(other)?.needsSync ?? true))) {
        state.needsSync = false;
        this.options.onWarning(
          `every node restarted without its data: fencing counters restart from their current values on ${node.label}.`,
        );
      } else if (windowOver) {
        // The nodes that kept their counters are down or unchecked, and the window has passed: every
        // lock granted before the restart has expired, so the node may grant again. Its counters may
        // be behind: a fenced resource refuses the older tokens (fencing checked by the resource).
        state.needsSync = false;
        this.options.onWarning(
          `no node that kept its fencing counters answers: ${node.label} counts again after its restart window with the counters it has; fenced resources refuse tokens below the ones they saw.`,
        );
      }
      return;
    }
    state.syncing = true;
    const pattern = `${escapeGlob(this.options.keyPrefix)}fence:*`;
    void Promise.all(sources.map((source) => readCounters(source, pattern)))
      .then(async (counters) => {
        const highest = new Map<string, string>();
        for (const found of counters) {
          for (const [key, value] of found) {
            const current = highest.get(key);
            if (current === undefined || greater(value, current)) highest.set(key, value);
          }
        }
        const entries = [...highest];
        for (let i = 0; i < entries.length; i += 200) {
          const batch = entries.slice(i, i + 200);
          await raiseFenceOnNode(
            node,
            batch.map(([k]) => k),
            batch.map(([, v]) => v),
          );
        }
        state.needsSync = false;
      })
      .catch((err: unknown) => {
        const text = err instanceof Error ? err.message : String(err);
        if (text.startsWith('NOPERM')) {
          // Not allowed to enumerate the counters: the node counts again once its quarantine
          // is over (the lock stays safe), but its counters rely on the catch-up of later rounds.
          state.needsSync = false;
          this.options.onWarning(
            `could not raise the fencing counters of restarted node ${node.label} (${text}): grant +scan to the lock user. Until then, fencing tokens after a restart of a majority of nodes may repeat.`,
          );
          return;
        }
        if (state.syncWarned) return;
        state.syncWarned = true;
        this.options.onWarning(
          `could not raise the fencing counters of restarted node ${node.label} yet (${text}); it does not count until this succeeds.`,
        );
      })
      .finally(() => {
        state.syncing = false;
      });
  }

  private later(run: () => void, ms: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }
}
