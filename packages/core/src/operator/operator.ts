/**
 * Operators' tools: `inspect` (who holds a resource, per node, without exposing the owner
 * token) and `forceRelease` (free a stuck lock everywhere and move the fencing counter past
 * every token handed out, so the old holder's token is stale from then on).
 */
import { createHash } from 'node:crypto';
import { isClusterClient } from '../nodes/cluster-client.js';
import { QuorumUnavailableError, RedlockArgumentError } from '../errors/errors.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import type { ForceReleaseEvent } from '../observability/events.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import {
  fairQueueOnQuorum,
  holdersOnQuorum,
  inspectPrimitivesOn,
  type NodePrimitives,
  type PrimitiveKeys,
  type QuorumHolder,
} from './operator-primitives.js';
import { runRound } from '../rounds/round.js';
import { READERS_MARKER } from '../scripts/read-write.js';
import { WAITERS_SCRIPT } from '../scripts/wake-queue.js';

/** One node's view of a resource. */
export interface NodeLockState {
  /** `host:port` (never credentials). */
  readonly node: string;
  readonly reachable: boolean;
  readonly error?: string;
  /** Whether the lock key exists on this node (a plain or write lock's owner, or the readers' marker). */
  readonly held: boolean;
  /** The lock key is held for readers (a read-write lock in a read phase): see `primitives.readers`. */
  readonly readPhase?: true;
  /** Remaining TTL of the lock key, ms. */
  readonly ttlMs?: number;
  /** First 12 hex digits of SHA-256 of the owner token: tells holders apart, reveals nothing. */
  readonly owner?: string;
  /** The fencing counter (decimal), when the resource was ever fenced. */
  readonly fencingCounter?: string;
  /** Connections subscribed to the resource's release notices (waiting processes), when PUBSUB is allowed. */
  readonly waiters?: number;
  /** Readers, waiting writers, permits, fair and addressed queues on this node (absent when the node refused the read). */
  readonly primitives?: NodePrimitives;
}

/** What `inspect()` found. */
export interface LockInspection {
  readonly resource: string;
  readonly nodes: readonly NodeLockState[];
  /** The owner hash held on a majority of nodes, if any: that owner holds the lock (a plain or write lock). */
  readonly holder?: string;
  readonly quorum: number;
  /** A read-write lock's readers holding it on a quorum (a writer is `holder`). */
  readonly readers?: { readonly count: number; readonly holders: readonly QuorumHolder[] };
  /** A read-write lock's waiting writers (most on any node): they keep new readers out. */
  readonly writersWaiting?: number;
  /** A semaphore's permits held on a quorum (`of`: its size, when given to `inspect`). */
  readonly permits?: {
    readonly held: number;
    readonly of?: number;
    readonly holders: ReadonlyArray<QuorumHolder & { readonly slot: number }>;
  };
  /** A fair lock's waiters queued on a quorum, in the order they get it. */
  readonly fairQueue?: readonly string[];
  /** Processes queued for the lock's addressed wake-up (most on any node: they queue on the key's arbiter). */
  readonly queued?: number;
}

/** Options of `inspect()`. */
export interface InspectOptions {
  /**
   * The semaphore's number of permits: its slot keys are read directly, and the answer says
   * "k of N". Without it, held slots are found by SCAN (walks the node's keyspace; needs +scan).
   */
  readonly permits?: number;
}

/** What `forceRelease()` did. */
export interface ForceReleaseResult {
  readonly resource: string;
  /** Nodes where a lock key was deleted. */
  readonly released: number;
  /** The fencing counter after the release: above every token handed out before. */
  readonly fencingCounter: bigint;
  readonly nodes: readonly NodeOutcome[];
}

/** What the tools need of their Redlock. */
export interface OperatorContext {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
  readonly timeoutMs: number;
  readonly lockKey: string;
  readonly fenceKey: string;
  /** The processes queued for the key's release on its arbiter (plain nodes, see scripts/wake-queue.ts). */
  readonly waitersKey?: string;
  /** The keys of the resource's read-write lock, semaphore and queues (inspect only). */
  readonly primitives?: PrimitiveKeys;
}

/** KEYS: lock key, fence key. Returns {owner or false, pttl, counter or false}. */
export const INSPECT_SCRIPT = defineScript(
  'inspect',
  `return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2])}`,
);

/**
 * KEYS: lock key, fence key; ARGV: the counter to raise the fence key to (decimal).
 * Deletes the lock key whoever holds it, publishes the release (waiters wake), raises the
 * counter. Returns the number of lock keys deleted (0 or 1).
 */
const FORCE_RELEASE_BODY = `local deleted = redis.call('DEL', KEYS[1])
if deleted > 0 then redis.call('PUBLISH', KEYS[1], '1') end
local cur = redis.call('GET', KEYS[2])
local v = ARGV[1]
if not cur or #cur < #v or (#cur == #v and cur < v) then redis.call('SET', KEYS[2], v) end
return deleted`;

export const FORCE_RELEASE_SCRIPT = defineScript('force-release', FORCE_RELEASE_BODY);

/** The same on Redis Cluster nodes: the release notice by sharded pub/sub, where their waiters listen. */
export const FORCE_RELEASE_SHARDED_SCRIPT = defineScript(
  'force-release-sharded',
  FORCE_RELEASE_BODY.replace("redis.call('PUBLISH', KEYS[1], '1')", "redis.pcall('SPUBLISH', KEYS[1], '1')"),
);

/** A short, one-way name for an owner token. */
export function ownerHash(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 12);
}

/**
 * The waiters a node knows of: processes queued for the key on it (a plain lock's waiters queue on
 * the key's arbiter), plus subscribers of the key's release notices (waiters of the primitives,
 * of multi-resource locks, and of Redis Cluster nodes).
 */
async function waiters(node: LockNode, channel: string, waitersKey: string | undefined): Promise<number | undefined> {
  const cluster = node.client;
  // A cluster's waiters subscribe by sharded pub/sub on the master of the channel's slot.
  if (isClusterClient(cluster)) return node.call(() => cluster.shardSubscribers(channel)).catch(() => undefined);
  const client = node.client as { call?: (...args: string[]) => Promise<unknown> };
  const [subscribed, queued] = await Promise.all([
    client.call
      ? node
          .call(() => client.call!('PUBSUB', 'NUMSUB', channel))
          .then(
            (reply) => (Array.isArray(reply) ? Number(reply[1]) : undefined),
            () => undefined,
          )
      : undefined,
    waitersKey
      ? node.run(WAITERS_SCRIPT, [waitersKey], ['']).then(
          (n) => Number(n),
          () => undefined,
        )
      : undefined,
  ]);
  return subscribed === undefined && queued === undefined ? undefined : (subscribed ?? 0) + (queued ?? 0);
}

/** Reads the resource's lock key, TTL, fencing counter and waiters on every node. */
export async function inspectResource(ctx: OperatorContext, resource: string): Promise<LockInspection> {
  const round = await runRound(
    ctx.nodes,
    (node) => node.run(INSPECT_SCRIPT, [ctx.lockKey, ctx.fenceKey], []),
    (reply) => ({ status: 'ok' as const, value: reply as [string | null, number, string | null] }),
    { quorum: ctx.quorum, timeoutMs: ctx.timeoutMs, early: false },
  );
  const reachable = (i: number): boolean => round.outcomes[i]!.status === 'ok';
  const [counts, primitives] = await Promise.all([
    Promise.all(ctx.nodes.map((node, i) => (reachable(i) ? waiters(node, ctx.lockKey, ctx.waitersKey) : Promise.resolve(undefined)))),
    Promise.all(
      ctx.nodes.map((node, i) =>
        reachable(i) && ctx.primitives ? inspectPrimitivesOn(node, ctx.primitives, ownerHash) : Promise.resolve(undefined),
      ),
    ),
  ]);
  const nodes = round.outcomes.map((o, i): NodeLockState => {
    const value = round.values[i];
    if (o.status !== 'ok' || !value) return { node: o.node, reachable: false, held: false, error: o.error ?? o.status };
    const [owner, pttl, counter] = value;
    const w = counts[i];
    const p = primitives[i];
    const readPhase = owner === READERS_MARKER;
    return {
      node: o.node,
      reachable: true,
      held: typeof owner === 'string',
      // The readers' marker is no owner: the readers are listed instead.
      ...(typeof owner === 'string'
        ? readPhase
          ? { readPhase: true as const, ttlMs: Number(pttl) }
          : { owner: ownerHash(owner), ttlMs: Number(pttl) }
        : {}),
      ...(typeof counter === 'string' ? { fencingCounter: counter } : {}),
      ...(w !== undefined ? { waiters: w } : {}),
      ...(p !== undefined ? { primitives: p } : {}),
    };
  });
  const tally = new Map<string, number>();
  for (const n of nodes) if (n.owner) tally.set(n.owner, (tally.get(n.owner) ?? 0) + 1);
  const holder = [...tally].find(([, count]) => count >= ctx.quorum)?.[0];
  return { resource, nodes, quorum: ctx.quorum, ...(holder ? { holder } : {}), ...onQuorum(nodes, ctx) };
}

/** The primitives' holders and queues as a quorum of nodes sees them. */
function onQuorum(nodes: readonly NodeLockState[], ctx: OperatorContext): Partial<LockInspection> {
  const per = nodes.map((n) => n.primitives);
  const most = (f: (p: NodePrimitives) => number | undefined): number => Math.max(0, ...per.map((p) => (p ? (f(p) ?? 0) : 0)));
  const readers = holdersOnQuorum(
    per.map((p) => p?.readers),
    ctx.quorum,
    (h) => h.owner,
  ).map((t) => ({ owner: t.holder.owner, nodes: t.nodes, ttlMs: t.ttlMs }));
  const permits = holdersOnQuorum(
    per.map((p) => p?.permits),
    ctx.quorum,
    (h) => `${h.slot} ${h.owner}`,
  )
    .map((t) => ({ slot: t.holder.slot, owner: t.holder.owner, nodes: t.nodes, ttlMs: t.ttlMs }))
    .sort((a, b) => a.slot - b.slot);
  const of = ctx.primitives?.slots?.length;
  const writersWaiting = most((p) => p.writersWaiting);
  const fairQueue = fairQueueOnQuorum(
    per.map((p) => p?.fairQueue),
    ctx.quorum,
  );
  const queued = most((p) => p.queued);
  return {
    ...(readers.length > 0 ? { readers: { count: readers.length, holders: readers } } : {}),
    ...(writersWaiting > 0 ? { writersWaiting } : {}),
    ...(permits.length > 0 || of !== undefined
      ? { permits: { held: permits.length, ...(of !== undefined ? { of } : {}), holders: permits } }
      : {}),
    ...(fairQueue.length > 0 ? { fairQueue } : {}),
    ...(queued > 0 ? { queued } : {}),
  };
}

/**
 * Deletes the resource's lock on every node, whoever holds it, and raises its fencing
 * counter to one above the largest a quorum reports (every token handed out was written
 * back to a majority, and every quorum meets that majority).
 *
 * @throws {RedlockArgumentError} without a reason.
 * @throws {QuorumUnavailableError} fewer than a quorum of nodes answered.
 */
export async function forceReleaseResource(
  ctx: OperatorContext,
  resource: string,
  options: unknown,
  audit: (event: ForceReleaseEvent) => void,
): Promise<ForceReleaseResult> {
  const reason = (options as { reason?: unknown } | null | undefined)?.reason;
  if (typeof reason !== 'string' || reason.trim() === '') {
    throw new RedlockArgumentError('forceRelease(resource, { reason }) needs a non-empty reason: it goes to the audit event.');
  }
  const state = await inspectResource(ctx, resource);
  const answered = state.nodes.filter((n) => n.reachable).length;
  const fail = (nodes: readonly NodeOutcome[], why: string): never => {
    throw new QuorumUnavailableError({ resources: [resource], attempts: 1, nodes, quorum: ctx.quorum, reason: why });
  };
  const outcomes = (): NodeOutcome[] =>
    state.nodes.map((n) =>
      n.reachable ? { node: n.node, status: 'ok' } : { node: n.node, status: 'error', error: n.error ?? 'unreachable' },
    );
  if (answered < ctx.quorum) fail(outcomes(), `only ${answered} node(s) answered: the largest fencing token cannot be known`);
  let highest = 0n;
  for (const n of state.nodes) if (n.fencingCounter !== undefined && BigInt(n.fencingCounter) > highest) highest = BigInt(n.fencingCounter);
  const target = highest + 1n;
  const round = await runRound(
    ctx.nodes,
    (node) =>
      node.run(
        isClusterClient(node.client) ? FORCE_RELEASE_SHARDED_SCRIPT : FORCE_RELEASE_SCRIPT,
        [ctx.lockKey, ctx.fenceKey],
        [String(target)],
      ),
    (reply) => ({ status: 'ok' as const, value: Number(reply) }),
    { quorum: ctx.quorum, timeoutMs: ctx.timeoutMs, early: false },
  );
  if (round.ok < ctx.quorum) fail(round.outcomes, `the release reached only ${round.ok} node(s); run it again`);
  const released = round.values.reduce<number>((sum, v) => sum + (v ?? 0), 0);
  audit({ resources: [resource], reason, holder: state.holder, released, fencingCounter: String(target), nodes: round.outcomes });
  return { resource, released, fencingCounter: target, nodes: round.outcomes };
}
