import { isClusterClient } from '../cluster-client.js';
import { defineScript, type LockNode } from '../lock-node.js';
import { synced } from '../replica-sync.js';
import type { ParsedReply } from '../round.js';

/**
 * What the lock key holds while readers hold the resource. Never an owner token (those are
 * 22 base64url characters), so a mutex or write acquisition (`SET NX`, `GET == token`) sees
 * the resource as held, and no owner-checked release or extend of a mutex ever matches it.
 */
export const READERS_MARKER = '#readers';

/** The node's own clock in ms: reader and waiting-writer leases are scored by it, as PX expiries are. */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * A write lock on one node: the lock key free (or ours) and no live reader. While blocked,
 * a waiting writer registers itself (scored by its lease end, node time) so that new readers
 * are refused until it got its turn: writer preference without starving readers forever,
 * because a writer that died stops being counted when its lease ends.
 *
 * KEYS: lock key, readers ZSET, waiting-writers ZSET, [fence counter]
 * ARGV: owner token, ttl ms, '1' to fence, waiting lease ms ('0': do not register)
 * Returns {1, [counter]} when set, {0, ms until a retry may succeed} when held.
 */
export const WRITE_ACQUIRE_SCRIPT = defineScript(
  'rw-write',
  `${NOW}
local holder = redis.call('GET', KEYS[1])
local blocked = -1
if holder and holder ~= ARGV[1] and holder ~= '${READERS_MARKER}' then
  blocked = redis.call('PTTL', KEYS[1])
elseif holder ~= ARGV[1] then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then blocked = tonumber(last[2]) - now end
end
if blocked ~= -1 then
  local lease = tonumber(ARGV[4])
  if lease > 0 then
    redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
    if redis.call('PTTL', KEYS[3]) < lease then redis.call('PEXPIRE', KEYS[3], lease) end
  end
  return {0, blocked}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[3] == '1' then
  redis.call('INCR', KEYS[4])
  return {1, redis.call('GET', KEYS[4])}
end
return {1}`,
);

/**
 * A read lock on one node: no writer holds the lock key and no writer waits (unless we are
 * already a reader here: a retry after a lost reply). The reader's lease is its score in
 * the readers ZSET (node time); the lock key holds {@link READERS_MARKER} for at least as
 * long as the longest lease, so it expires with the last reader.
 *
 * KEYS: lock key, readers ZSET, waiting-writers ZSET, [fence counter]
 * ARGV: owner token, ttl ms, '1' to read the fence counter
 * Returns {1, [counter]} when granted, {0, pttl or -1} when a writer holds or waits.
 */
export const READ_ACQUIRE_SCRIPT = defineScript(
  'rw-read',
  `${NOW}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= '${READERS_MARKER}' then return {0, redis.call('PTTL', KEYS[1])} end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {0, -1} end
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('SET', KEYS[1], '${READERS_MARKER}', 'PX', ttl) end
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
if ARGV[3] == '1' then
  return {1, redis.call('GET', KEYS[4]) or '0'}
end
return {1}`,
);

/**
 * Owner-checked extension of a reader's lease. A lease that already ended is not renewed
 * (a writer may have held the resource since). The marker is only ever lengthened.
 *
 * KEYS: lock key, readers ZSET; ARGV: owner token, ttl ms. Returns 1 when extended, 0 when not ours.
 */
export const READ_EXTEND_SCRIPT = defineScript(
  'rw-read-extend',
  `${NOW}
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) <= now or redis.call('GET', KEYS[1]) ~= '${READERS_MARKER}' then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1`,
);

/**
 * Owner-checked release of a reader's lease. The last reader out deletes the marker and
 * publishes on the lock key (waiting writers listen there); otherwise the marker is
 * shortened to the longest remaining lease.
 *
 * KEYS: lock key, readers ZSET; ARGV: owner token. Returns 1 when our lease was live, 0 otherwise.
 */
const READ_RELEASE_BODY = `${NOW}
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local marked = redis.call('GET', KEYS[1]) == '${READERS_MARKER}'
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if last[2] then
  local left = math.max(1, tonumber(last[2]) - now)
  if marked then redis.call('PEXPIRE', KEYS[1], left) end
  redis.call('PEXPIRE', KEYS[2], left)
elseif marked then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[1], '1')
end
if tonumber(score) > now then return 1 end
return 0`;

/** The reader's release of plain nodes (see READ_RELEASE_BODY). */
export const READ_RELEASE_SCRIPT = defineScript('rw-read-release', READ_RELEASE_BODY);

/**
 * The reader's release of Redis Cluster nodes: the notice to waiting writers goes out by
 * sharded pub/sub on the lock key (its slot's shard only, where they listen), as the mutex's
 * release-sharded script does.
 */
export const READ_RELEASE_SHARDED_SCRIPT = defineScript(
  'rw-read-release-sharded',
  READ_RELEASE_BODY.replace("redis.call('PUBLISH', KEYS[1], '1')", "redis.pcall('SPUBLISH', KEYS[1], '1')"),
);

/**
 * A failed write attempt that will retry gives back what it set on a node and waits there: the
 * lock key is deleted if it holds our token, and we join the waiting writers, as a node that
 * refused us already made us. Without it, the nodes where the attempt had won let new readers
 * in again after the release while the others kept them out, and with no node to spare (a
 * minority down) readers and the writer kept taking different nodes, none of them ever all it
 * needed. No release notice: the resource is free for no one here (new readers are refused
 * while we wait, a competing writer retries at its poll), and our own waiter would wake on it.
 *
 * KEYS: lock key, waiting-writers ZSET; ARGV: owner token, waiting lease ms.
 * Returns 1 when our key was deleted, 0 otherwise.
 */
export const WRITE_YIELD_SCRIPT = defineScript(
  'rw-write-yield',
  `${NOW}
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
return released`,
);

/** Leaves the waiting writers (a writer that gave up waiting). KEYS: waiting-writers ZSET; ARGV: owner token. */
export const WRITE_ABANDON_SCRIPT = defineScript('rw-write-abandon', `return redis.call('ZREM', KEYS[1], ARGV[1])`);

/** Keys of one resource's read-write lock, in the order the scripts take them. */
export interface ReadWriteKeys {
  readonly lock: string;
  readonly readers: string;
  readonly writers: string;
}

/** Whether an acquisition's reply is a grant ({1, ...}). */
function granted(reply: unknown): boolean {
  return Array.isArray(reply) && Number(reply[0]) === 1;
}

/** Sends the write acquisition to one node. */
export function writeAcquireOnNode(
  node: LockNode,
  keys: ReadWriteKeys,
  fenceKey: string | undefined,
  token: string,
  ttlMs: number,
  waitLeaseMs: number,
): Promise<unknown> {
  const all = [keys.lock, keys.readers, keys.writers, ...(fenceKey === undefined ? [] : [fenceKey])];
  // With replicaSync, a grant counts once replicas confirmed it (WAIT, the exchange's follow-up), as for the mutex.
  const x = node.exchange();
  return synced(
    node,
    keys.lock,
    x.run(WRITE_ACQUIRE_SCRIPT, all, [token, ttlMs, fenceKey === undefined ? '0' : '1', waitLeaseMs]),
    granted,
    x,
  );
}

/** Sends the read acquisition to one node. */
export function readAcquireOnNode(
  node: LockNode,
  keys: ReadWriteKeys,
  fenceKey: string | undefined,
  token: string,
  ttlMs: number,
): Promise<unknown> {
  const all = [keys.lock, keys.readers, keys.writers, ...(fenceKey === undefined ? [] : [fenceKey])];
  const x = node.exchange();
  return synced(node, keys.lock, x.run(READ_ACQUIRE_SCRIPT, all, [token, ttlMs, fenceKey === undefined ? '0' : '1']), granted, x);
}

/** A reader's extension on one node; `keys` are the read lock's keys: [lock key, readers ZSET]. */
export function readExtendOnNode(node: LockNode, keys: readonly string[], token: string, ttlMs: number): Promise<unknown> {
  const x = node.exchange();
  return synced(node, keys[0]!, x.run(READ_EXTEND_SCRIPT, keys, [token, ttlMs]), (reply) => Number(reply) === 1, x);
}

/** A reader's release on one node; `keys` are the read lock's keys: [lock key, readers ZSET]. */
export function readReleaseOnNode(node: LockNode, keys: readonly string[], token: string): Promise<unknown> {
  return node.run(isClusterClient(node.client) ? READ_RELEASE_SHARDED_SCRIPT : READ_RELEASE_SCRIPT, keys, [token]);
}

/** A failed write attempt's yield on one node: our key released, and waiting there for `leaseMs`. */
export function writeYieldOnNode(node: LockNode, keys: ReadWriteKeys, token: string, leaseMs: number): Promise<unknown> {
  return node.run(WRITE_YIELD_SCRIPT, [keys.lock, keys.writers], [token, leaseMs]);
}

/** Withdraws a waiting writer on one node. */
export function abandonWriteOnNode(node: LockNode, writersKey: string, token: string): Promise<unknown> {
  return node.run(WRITE_ABANDON_SCRIPT, [writersKey], [token]);
}

/** Parses either acquisition's reply: the fence counter (as a string) as the value, when fencing. */
export function parseReadWriteReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  if (Number(reply[0]) === 1) return { status: 'ok', value: reply.slice(1).map(String) };
  const wait = Number(reply[1]);
  return wait > 0 ? { status: 'held', ttlMs: wait } : { status: 'held' };
}
