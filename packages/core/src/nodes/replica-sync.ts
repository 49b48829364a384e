/**
 * Replica-synced grants. A master that fails over before replicating a lock loses it: its
 * promoted replica never saw the key, and a second client acquires it (the Redis
 * distributed-locks page says so of failover, and it is the restart-without-persistence
 * hazard again). With `replicaSync`, a node's grant (acquire, extend, fencing increment)
 * counts only once `WAIT replicas timeoutMs` confirms that many replicas have it.
 *
 * It guarantees that a grant which counted survives the failover of that master to one of
 * the replicas that acknowledged it (Sentinel and Redis Cluster promote the most up-to-date
 * replica). It does not make replication synchronous for anything else, and a failover to
 * a replica that did not acknowledge (forced, or with fewer replicas than `replicas` left in
 * sync) can still lose it. It costs one more round trip to the master per granted write (one
 * WAIT per connection per tick, however many grants it confirms), and grants fail (the node
 * counts as timed out, retried within `timeoutMs`) while fewer replicas than asked are in sync.
 */
import { isClusterClient } from './cluster-client.js';
import { RedlockArgumentError } from '../errors/errors.js';
import type { LockNode } from './lock-node.js';
import type { NodeExchange } from './node-wire.js';
import type { ClusterNodeClient } from './node-client.js';

/** `replicaSync` of a Redlock: how many replicas must confirm a grant, and how long to wait for them. */
export interface ReplicaSyncOptions {
  /** Replicas that must acknowledge each grant (`WAIT`'s numreplicas). At least 1. */
  readonly replicas: number;
  /** How long `WAIT` waits for them, in ms. Default: half of `nodeTimeoutMs`. Must be below `nodeTimeoutMs`. */
  readonly timeoutMs?: number;
}

/**
 * A grant the node made but fewer replicas than asked confirmed in time: it does not count.
 * Its `code` is `ETIMEDOUT`: `WAIT` timed out, so the node counts as timed out (not down) and the
 * attempt is retried within the caller's `timeoutMs`, as for a slow node. A replica that is only
 * behind (a burst, a loaded machine) catches up; one that is gone is reported once the time is spent.
 */
export class ReplicaSyncError extends Error {
  override readonly name = 'ReplicaSyncError';
  readonly code = 'ETIMEDOUT';
}

interface Resolved {
  readonly replicas: number;
  readonly timeoutMs: number;
}

const settings = new WeakMap<LockNode, Resolved>();

interface WaitClient {
  wait(replicas: number, timeoutMs: number): Promise<number>;
}

/**
 * Validates `replicaSync` and turns it on for `nodes`.
 * @throws {RedlockArgumentError} on a malformed option.
 */
export function enableReplicaSync(nodes: readonly LockNode[], given: unknown, nodeTimeoutMs: number): void {
  if (given === undefined || given === false) return;
  const o = given as Partial<ReplicaSyncOptions>;
  if (typeof given !== 'object' || given === null || !Number.isInteger(o.replicas) || o.replicas! < 1) {
    throw new RedlockArgumentError(
      'replicaSync must be { replicas: n, timeoutMs?: ms } with n an integer ≥ 1, e.g. { replicas: 1, timeoutMs: 100 }.',
    );
  }
  const timeoutMs = o.timeoutMs ?? Math.max(1, Math.floor(nodeTimeoutMs / 2));
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs >= nodeTimeoutMs) {
    throw new RedlockArgumentError(
      `replicaSync.timeoutMs (${String(o.timeoutMs)}) must be an integer from 1 to below nodeTimeoutMs (${nodeTimeoutMs}): ` +
        'a node whose WAIT outlasts the node timeout would count as timed out anyway.',
    );
  }
  for (const node of nodes) {
    if (!isClusterClient(node.client) && typeof (node.client as Partial<WaitClient>).wait !== 'function') {
      throw new RedlockArgumentError(`replicaSync needs clients that can send WAIT; the client for ${node.label} has no wait() method.`);
    }
    settings.set(node, { replicas: o.replicas!, timeoutMs });
  }
}

/** Whether grants on `node` wait for replicas. */
export function syncsReplicas(node: LockNode): boolean {
  return settings.has(node);
}

/** The grants of one tick on one connection, confirmed by one WAIT sent when the tick ends. */
interface Batch {
  readonly keys: string[];
  /** The exchange of the grant that opened the batch: the WAIT is its follow-up (see LockNode.exchange). */
  readonly via: NodeExchange;
  readonly acks: Promise<number>;
}

/** Per node, per master connection ('' for a plain node): the batch of this tick, not sent yet. */
const batches = new WeakMap<LockNode, Map<string, Batch>>();

/**
 * The replicas that acknowledged every write before a WAIT on `key`'s master connection, one WAIT
 * for all the grants of a tick on that connection. WAIT counts every earlier write of the
 * connection it is sent on, and each grant joining the batch was answered (so applied) before the
 * WAIT is written. One WAIT per grant would serialise them: WAIT blocks its connection until the
 * replica acknowledges, so a burst of grants would queue one replica round trip each behind it.
 */
function acksFor(node: LockNode, key: string, cfg: Resolved, via: NodeExchange): Promise<number> {
  const client = node.client;
  // A cluster master is known by the client's slot map; without one, no batching (one WAIT per grant).
  const master = isClusterClient(client) ? client.masterOf?.(key) : '';
  if (master === undefined) return via.call(() => (client as ClusterNodeClient).replicaAcks(key, cfg.replicas, cfg.timeoutMs));
  let open = batches.get(node);
  if (!open) batches.set(node, (open = new Map<string, Batch>()));
  const joined = open.get(master);
  if (joined) {
    joined.keys.push(key);
    return joined.acks;
  }
  const keys = [key];
  const acks = new Promise<number>((resolve, reject) => {
    process.nextTick(() => {
      open.delete(master);
      sendWait(node, master, keys, cfg, via).then(resolve, reject);
    });
  });
  open.set(master, { keys, via, acks });
  return acks;
}

/**
 * The batch's WAIT: on the plain node's connection, or routed by a key whose slot the master still
 * serves. Sent as the opening grant's follow-up, so it goes before new attempts in a burst's backlog
 * and the node is not charged for the time it waited there.
 */
function sendWait(node: LockNode, master: string, keys: readonly string[], cfg: Resolved, via: NodeExchange): Promise<number> {
  const client = node.client;
  if (!isClusterClient(client)) return via.call((c) => (c as unknown as WaitClient).wait(cfg.replicas, cfg.timeoutMs));
  // The slot map changed within the tick (MOVED): the keys no longer on that master wait one by one.
  const moved = keys.filter((k) => client.masterOf?.(k) !== master);
  const waits = [keys.find((k) => !moved.includes(k)), ...moved].flatMap((k) =>
    k === undefined ? [] : [via.call(() => client.replicaAcks(k, cfg.replicas, cfg.timeoutMs))],
  );
  return Promise.all(waits).then((acks) => Math.min(...acks));
}

/**
 * Resolves once `replicas` replicas of the master that holds `key` acknowledged every write
 * our connection to it made so far; rejects with {@link ReplicaSyncError} when fewer did in time.
 */
export async function confirmReplicas(node: LockNode, key: string, via: NodeExchange = node): Promise<void> {
  const cfg = settings.get(node);
  if (!cfg) return;
  // WAIT counts the writes of the connection it is sent on: the grant's, on the same connection.
  const acks = await acksFor(node, key, cfg, via);
  if (Number(acks) < cfg.replicas) {
    throw new ReplicaSyncError(
      `${Number(acks)} of ${cfg.replicas} replica(s) of ${node.label} confirmed the write within ${cfg.timeoutMs} ms (WAIT): ` +
        'a failover could lose it, so it does not count. Check the replicas (INFO replication) or lower replicaSync.replicas.',
    );
  }
}

/**
 * `sent`'s reply once, when `granted(reply)`, replicas confirmed it (see {@link confirmReplicas}).
 * `via`: the exchange `sent` was part of, so the WAIT is its follow-up.
 */
export function synced<T>(
  node: LockNode,
  key: string,
  sent: Promise<T>,
  granted: (reply: T) => boolean,
  via: NodeExchange = node,
): Promise<T> {
  if (!settings.has(node)) return sent;
  return sent.then(async (reply) => {
    if (granted(reply)) await confirmReplicas(node, key, via);
    return reply;
  });
}
