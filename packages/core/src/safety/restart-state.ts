import { syncsReplicas } from '../nodes/replica-sync.js';
import type { LockNode } from '../nodes/lock-node.js';
import { fsyncAlways, infoField } from '../nodes/node-commands.js';

/** What the restart rule (restart-rule.ts) knows of one node's server. */
export class NodeState {
  runId: string | undefined;
  /** Monotonic time the server process started, rounded later (so the quarantine is never short). */
  startedAtMono = -Infinity;
  /**
   * The server's uptime when this Redlock first saw its current run (ms, rounded down). A
   * node first seen at least the largest declared TTL after its start is "known old": its
   * locks may predate any younger node's (re)start. Fixed per run, so a node does not turn
   * old later and push younger nodes out of a quorum they already counted in.
   */
  seenUptimeMs = 0;
  /**
   * The current run was first seen on this Redlock's first look at the node (not as a
   * changed run_id): whether it restarted cannot be told from here, only guessed from its
   * uptime (see RestartRule's declared TTL).
   */
  firstSight = false;
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
  /** The counters of this run were asked to be raised once already (held out as a young node). */
  syncAsked = false;
  syncing = false;
  /** A failed raise was reported (once per restart, not once per lock operation). */
  syncWarned = false;
  generation = 0;
}

/** What one INFO of a node's new connection tells the restart rule. */
export interface NodeLook {
  readonly runId: string;
  /** Monotonic time the server started (rounded later, see below). */
  readonly startedAtMono: number;
  /** The server's uptime, rounded down to the second INFO reports. */
  readonly uptimeMs: number;
  /** It keeps what it acknowledged across a restart (AOF with appendfsync always, or a promoted replica). */
  readonly persistent: boolean;
}

/**
 * Reads run_id, uptime and persistence of `node` with one INFO; `'blind'` when the user
 * may not run INFO.
 *
 * @example
 * ```ts
 * const look = await inspectNode(node); // { runId, startedAtMono, uptimeMs, persistent } or 'blind'
 * ```
 */
export async function inspectNode(node: LockNode): Promise<'blind' | NodeLook> {
  let info: string;
  try {
    // On the client, not through the node (LockNode.call): there it would queue behind a burst's
    // backlog, and every grant of the burst would wait for this first look. A node that never
    // answers is still failed by its backstop, with the node's own commands.
    info = await node.client.info('default');
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOPERM')) return 'blind';
    throw err;
  }
  // uptime_in_seconds is rounded down: the server started at least this long ago, so
  // taking "now minus uptime" as its start never shortens the quarantine.
  const uptimeMs = Number(infoField(info, 'uptime_in_seconds') ?? 0) * 1_000;
  const startedAtMono = performance.now() - uptimeMs;
  const runId = infoField(info, 'run_id') ?? '';
  // With replicaSync, a replica promoted by a failover (it has a second replication id)
  // holds every grant that counted: it keeps its data like a durable restart does.
  const promoted = syncsReplicas(node) && Number(infoField(info, 'second_repl_offset') ?? -1) > 0;
  const persistent = promoted || (infoField(info, 'aof_enabled') === '1' && (await fsyncAlways(node)));
  return { runId, startedAtMono, uptimeMs, persistent };
}
