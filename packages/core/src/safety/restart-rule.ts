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
 *
 * A node first seen by this Redlock cannot show whether it restarted: only its uptime hints
 * at it. With `restartRule.maxTtlMs` configured, any non-durable node younger than it sits
 * out (strict). With only a declared TTL (`restartRule.declaredTtlMs`, the Nest module's
 * `ttl` and decorators), a young node sits out only while another node of the set was
 * already older than that TTL when first seen: a majority restarted under a survivor that
 * may still hold a lock. When every node is young, a fresh deployment and a whole-set
 * restart look the same from a cold process: they count (docs/operations.md).
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { CommandClient } from '../nodes/node-commands.js';
import { NodeRestartedError } from '../errors/node-outcome.js';
import { FirstLooks } from './first-looks.js';
import { inspectNode, NodeState } from './restart-state.js';
import { raiseCounters } from './restart-sync.js';

/** What the rule needs of its Redlock. */
export interface RestartRuleOptions {
  /** Prefix of the lock and fencing keys (`<prefix>fence:*` are raised after a restart). */
  readonly keyPrefix: string;
  /** The largest TTL any client of these nodes uses (configured: strict at first sight); 0: not configured. */
  readonly maxTtlMs: number;
  /** The largest TTL this process declares (see the file's comment); 0: none. Raised by `declareTtl`. */
  readonly declaredTtlMs: number;
  /** How long a young node's verdict waits for the other nodes' first looks (the node timeout). */
  readonly firstLookMs: number;
  readonly onWarning: (message: string) => void;
}

/**
 * Tracks, per node, when its server last started and whether it keeps its data, and says
 * whether a node's answer counts toward a quorum. One per Redlock.
 */
export class RestartRule {
  private largestTtlMs = 0;
  private declaredMs: number;
  private readonly looks = new FirstLooks();
  private readonly states = new Map<LockNode, NodeState>();
  private readonly detach: Array<() => void> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private warnedBlind = false;

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly options: RestartRuleOptions,
  ) {
    this.declaredMs = options.declaredTtlMs;
    // A connection that failed or ended settles that node's first look: waiting verdicts go on without it.
    const changed = (): void => this.looks.changed();
    for (const node of nodes) {
      // A Redis Cluster node answers INFO from any of its masters: per-connection restart detection does not apply.
      if (isClusterClient(node.client)) continue;
      const state = new NodeState();
      this.states.set(node, state);
      const onReady = (): void => this.check(node, state);
      node.client.on?.('ready', onReady);
      node.client.on?.('error', changed);
      node.client.on?.('end', changed);
      this.detach.push(() => {
        const client = node.client as CommandClient;
        client.removeListener?.('ready', onReady);
        client.removeListener?.('error', changed);
        client.removeListener?.('end', changed);
      });
      if (node.client.status === 'ready') this.check(node, state);
    }
  }

  /** The largest TTL in use: the configured one, the declared one, or the largest this Redlock has asked for. */
  get maxTtlMs(): number {
    return Math.max(this.options.maxTtlMs, this.declaredMs, this.largestTtlMs);
  }

  /** Raises the declared TTL (see the file's comment): a TTL this process will use, known before it does. */
  declareTtl(ttlMs: number): void {
    if (ttlMs > this.declaredMs) this.declaredMs = ttlMs;
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
      if (state.checking) return state.checking.then(() => this.judged(node, state, reply));
      return this.judged(node, state, reply);
    });
  }

  /** The verdict on `reply`; for a young node, once the other nodes' first looks said whether one is old. */
  private judged<T>(node: LockNode, state: NodeState, reply: T): T | Promise<T> {
    const settled = state.quarantined || !this.youngAtFirstSight(state, performance.now());
    if (settled || this.oldNode(node) !== undefined || !this.othersPending(node)) {
      return this.verdict(node, reply);
    }
    const seen = (): boolean => this.oldNode(node) !== undefined || !this.othersPending(node);
    // Still unseen after the bound: exclusion() keeps the node out of this round (retried like a slow node).
    return this.looks.wait(seen, this.options.firstLookMs).then(() => this.verdict(node, reply));
  }

  /** First seen (not seen restarting) within the declared TTL of its start, without durable persistence. */
  private youngAtFirstSight(state: NodeState, now: number): boolean {
    return state.firstSight && !state.persistent && !state.blind && now < state.startedAtMono + this.declaredMs;
  }

  /** Another node that was up for the declared TTL or longer when first seen: it may hold locks older than a young node's start. */
  private oldNode(node: LockNode): LockNode | undefined {
    return this.nodes.find((other) => {
      const s = other === node ? undefined : this.states.get(other);
      return s?.runId !== undefined && !s.blind && s.seenUptimeMs >= this.declaredMs;
    });
  }

  /**
   * Another node not seen yet (connecting, its first INFO on the way or failed and asked again)
   * while its connection has not failed: it may be the old node that shows a young one restarted.
   */
  private othersPending(node: LockNode): boolean {
    return this.nodes.some((other) => {
      const s = other === node ? undefined : this.states.get(other);
      return s?.runId === undefined && s !== undefined && !s.blind && !other.connection.isDown && other.client.status !== 'end';
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
    const young = this.youngAtFirstSight(state, now);
    const old = young ? this.oldNode(node) : undefined;
    if (young && old === undefined && this.othersPending(node)) {
      // Counting it now could count a restarted node before the survivor that shows it is seen.
      const why = `the restart rule: up ${Math.round(state.seenUptimeMs / 1_000)} s when first seen; it counts once the other nodes' first INFO shows none of them older than the declared TTL (${this.declaredMs} ms)`;
      return { why };
    }
    if (old !== undefined) {
      // Held out for the first time in this run: its counters may be behind the survivor's.
      if (!state.syncAsked) {
        state.syncAsked = true;
        state.needsSync = true;
        state.syncWarned = false;
      }
      this.sync(node, state);
      const countsInMs = Math.ceil(state.startedAtMono + this.declaredMs - now);
      // Its start cannot be told from a restart: the survivor may still hold a lock it lost.
      const why = `the restart rule: it counts again in ${countsInMs} ms (up ${Math.round(state.seenUptimeMs / 1_000)} s when first seen, while ${old.label} was up longer than the largest declared TTL, ${this.declaredMs} ms: it may have restarted empty under a lock still held there)`;
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
    this.looks.close();
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
    const run = inspectNode(node).then(
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
        if (firstSight || restarted) {
          state.seenUptimeMs = found.uptimeMs;
          state.firstSight = firstSight;
          state.syncAsked = false;
        }
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
      // After the state above is complete: a verdict waiting for this node's first look reads it.
      this.looks.changed();
    });
  }

  private warnBlind(node: LockNode): void {
    if (this.warnedBlind) return;
    this.warnedBlind = true;
    this.options.onWarning(
      `${node.label} refuses INFO (NOPERM): restarts of this node cannot be detected, so the restart rule is not enforced on it. Grant +info to the lock user.`,
    );
  }

  /** See {@link raiseCounters}. */
  private sync(node: LockNode, state: NodeState, windowOver = false): void {
    if (this.closed) return;
    raiseCounters(
      node,
      state,
      { nodes: this.nodes, states: this.states, keyPrefix: this.options.keyPrefix, onWarning: this.options.onWarning },
      windowOver,
    );
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
