import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';

/**
 * One attempt of a fair acquisition on one node: the node's FIFO queue of the resource
 * decides whether we may try, the lock key itself is still taken by an owner-checked
 * SET NX, so the queue can only cost fairness or latency, never mutual exclusion.
 *
 * Queue: a sorted set, member = waiter id (`<process id>:<n>`), score = the waiter's ticket.
 * Modes (ARGV[5]):
 * - `first`: the lock is taken at once when the queue is empty and the key free (no queue
 *   entry is written); otherwise the waiter joins with a fresh ticket from the node's counter.
 * - `take` (woken by the notices of a quorum naming us as their head): try the key without
 *   reading the queue again. A node whose head is someone else can grant us out of turn only
 *   while that waiter lacks a quorum of notices, so it costs at most a split attempt.
 * - `beat` (fallback poll): re-join with our quorum ticket if the node lost us (restarted
 *   empty, or we were dropped as dead while paused), raise the node's counter to it, and drop
 *   dead heads (a head whose process has no live lease in the resource's liveness set)
 *   before looking at the head. Behind a live head, the reply names it: a head of our own
 *   process that no longer waits (its leave was lost, e.g. not replicated before a failover)
 *   is left for it by the client (see FairSession), since its live lease keeps it here.
 * On a grant, the waiter leaves the queue in the same script.
 *
 * Every key is the resource's and passed in KEYS (hash-tagged alike on Redis Cluster nodes, so
 * the script runs in one slot; Dragonfly refuses scripts touching undeclared keys).
 *
 * KEYS: lock key, queue key, counter key, liveness set, fence key (only with fencing)
 * ARGV: owner token, ttl ms, waiter id, quorum ticket ('0' while unknown), mode
 * Returns {1, fence counter?} on a grant, {0, pttl, ticket, rank, head?} otherwise (the mutex's
 * acquire reply, with our place appended, and in `beat` mode the live head ahead of us; pttl 0
 * where the hint is not worth a command).
 */
export const FAIR_ACQUIRE_SCRIPT = defineScript(
  'fair-acquire',
  `local me = ARGV[3]
local ticket = tonumber(ARGV[4])
local mode = ARGV[5]
local function take()
  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then return nil end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  local reply = {1}
  if KEYS[5] then
    redis.call('INCR', KEYS[5])
    reply[2] = redis.call('GET', KEYS[5])
  end
  return reply
end
if mode == 'first' then
  local queued = redis.call('ZCARD', KEYS[2])
  if queued == 0 then
    local granted = take()
    if granted then return granted end
  end
  ticket = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[2], ticket, me)
  -- the holder's time left is a useful hint only to the head
  local pttl = 0
  if queued == 0 then pttl = redis.call('PTTL', KEYS[1]) end
  return {0, pttl, ticket, queued}
end
if mode == 'take' then
  -- the notice named us as this node's head: try the key without reading the queue again
  local granted = take()
  if granted then
    redis.call('ZREM', KEYS[2], me)
    return granted
  end
  redis.call('ZADD', KEYS[2], 'NX', ticket, me)
  return {0, 0, ticket, 0}
end
redis.call('ZADD', KEYS[2], ticket, me)
if tonumber(redis.call('GET', KEYS[3]) or '0') < ticket then redis.call('SET', KEYS[3], ticket) end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local now
while head and head ~= me do
  -- the node's clock, read only when someone is ahead of us
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local lease = redis.call('ZSCORE', KEYS[4], string.match(head, '^[^:]*'))
  if lease and tonumber(lease) > now then break end
  redis.call('ZREM', KEYS[2], head)
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
end
if head == me then
  local granted = take()
  if granted then
    redis.call('ZREM', KEYS[2], me)
    return granted
  end
  return {0, redis.call('PTTL', KEYS[1]), ticket, 0}
end
return {0, 0, ticket, redis.call('ZRANK', KEYS[2], me), head}`,
);

/** How an attempt talks to the queue (see {@link FAIR_ACQUIRE_SCRIPT}). */
export type FairMode = 'first' | 'take' | 'beat';

/** The keys of one fair resource on a node. */
export interface FairKeys {
  readonly lock: string;
  readonly queue: string;
  readonly counter: string;
  /** The processes' liveness leases of this resource (see FAIR_ALIVE_SCRIPT). */
  readonly alive: string;
  /** The fencing counter, when the acquisition asked for a token. */
  readonly fence?: string;
}

/** Sends one fair attempt to one node. */
export function fairAcquireOnNode(
  node: LockNode,
  keys: FairKeys,
  token: string,
  ttlMs: number,
  waiter: string,
  ticket: number,
  mode: FairMode,
): Promise<unknown> {
  const k = [keys.lock, keys.queue, keys.counter, keys.alive, ...(keys.fence ? [keys.fence] : [])];
  // With replicaSync, a grant counts once replicas confirmed it (WAIT), as for the mutex.
  const x = node.exchange();
  const sent = x.run(FAIR_ACQUIRE_SCRIPT, k, [token, ttlMs, waiter, ticket, mode]);
  return synced(node, keys.lock, sent, (reply) => Array.isArray(reply) && Number(reply[0]) === 1, x);
}

/** Where a waiter stands on one node after an attempt that did not grant. */
export interface FairPlace {
  readonly ticket: number;
  /** 0 = head of that node's queue. */
  readonly rank: number;
  /** The waiter at the head, ahead of us (replies of the `beat` mode only). */
  readonly head?: string;
}

/** Our place in a node's queue from a fair attempt's reply; undefined on a grant or an error. */
export function fairPlace(reply: unknown): FairPlace | undefined {
  if (!Array.isArray(reply) || Number(reply[0]) !== 0 || reply.length < 4) return undefined;
  const head: unknown = reply[4];
  return typeof head === 'string'
    ? { ticket: Number(reply[2]), rank: Number(reply[3]), head }
    : { ticket: Number(reply[2]), rank: Number(reply[3]) };
}

/**
 * A process' liveness lease on one resource, refreshed while it waits there fairly: a sorted
 * set per resource (`<prefix>fair-alive:<resource>`), member = process id, score = the lease's
 * end in the node's time. A head whose process' lease ended is dropped by the `beat` mode
 * above. Per resource, not one key per process, so the acquire script finds it in its own
 * slot on Redis Cluster nodes and in its KEYS everywhere. Ended leases are pruned here.
 *
 * KEYS: the liveness set; ARGV: process id, lease ms.
 */
export const FAIR_ALIVE_SCRIPT = defineScript(
  'fair-alive',
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`,
);

/** Refreshes this process' liveness lease on a resource (`key`: its liveness set) on one node. */
export function fairAliveOnNode(node: LockNode, key: string, processId: string, ttlMs: number): Promise<unknown> {
  return node.run(FAIR_ALIVE_SCRIPT, [key], [processId, ttlMs]);
}
