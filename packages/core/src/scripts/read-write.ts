/**
 * The acquisitions of read-write locks, phase-fair (Brandenburg and Anderson's phase-fair
 * reader-writer locks): a waiting writer stops new readers, the readers who waited during a write
 * phase all go in after it, before the next writer, and writers alternate with those read phases.
 * The phases live on each node, in the keys below; a quorum of nodes decides every grant, as for
 * the mutex. Every waiting mark is a lease (scored by the node's own clock), so a waiter that died
 * blocks nobody past its lease. Releases, extensions and withdrawals: read-write-release.ts.
 *
 * Keys of a resource (KEYS in this order):
 * 1. the lock key: a writer's (or a plain lock's) owner token, or {@link READERS_MARKER};
 * 2. readers: ZSET of reader tokens scored by their lease ends;
 * 3. waiting writers: ZSET, scored by lease end;
 * 4. queued readers: readers refused while a writer held or waited (they go after the next write phase);
 * 5. the batch: the queued readers when a write lock was released; they go in before the next writer.
 *    Its name is also the channel on which a read phase opening is published (to every reader).
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript, type LuaScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * What the lock key holds while readers hold the resource (or while it is kept for the readers of
 * a batch, see WRITE_RELEASE). Never an owner token (those are 22 base64url characters), so a mutex
 * or write acquisition (`SET NX`, `GET == token`) sees the resource as held, and no owner-checked
 * release or extend of a mutex ever matches it.
 */
export const READERS_MARKER = '#readers';

/** Keys of one resource's read-write lock, in the order the scripts take them. */
export interface ReadWriteKeys {
  readonly lock: string;
  readonly readers: string;
  readonly writers: string;
  readonly queued: string;
  readonly batch: string;
}

/** A script that publishes, in its two forms: PUBLISH on plain nodes, sharded SPUBLISH on Redis Cluster nodes. @internal */
export interface NotifyingScript {
  readonly plain: LuaScript;
  readonly sharded: LuaScript;
}

/**
 * Defines `body` twice: with `notify(channel)` as PUBLISH, and as SPUBLISH for Redis Cluster nodes
 * (the notice reaches the key's shard only; on a server without it, it fails inside pcall and
 * waiters there poll), as the mutex's release scripts do.
 * @internal
 */
export function defineNotifying(name: string, body: string): NotifyingScript {
  return {
    plain: defineScript(name, `local function notify(channel) redis.call('PUBLISH', channel, '1') end\n${body}`),
    sharded: defineScript(`${name}-sharded`, `local function notify(channel) redis.pcall('SPUBLISH', channel, '1') end\n${body}`),
  };
}

/** The form of `script` for `node`. @internal */
export function formFor(node: LockNode, script: NotifyingScript): LuaScript {
  return isClusterClient(node.client) ? script.sharded : script.plain;
}

/** Lua: the node's own clock in ms. Reader and waiter leases are scored by it, as PX expiries are. */
export const CLOCK = `local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Lua: the queued readers join the batch (the write phase they waited for ends: they go in next).
 * Their lease ends are kept, and the batch lives as long as its longest lease.
 */
export const PROMOTE = `local function promote(queued, batch)
  if redis.call('EXISTS', queued) == 0 then return end
  if redis.call('EXISTS', batch) == 0 then
    redis.call('RENAME', queued, batch)
    return
  end
  local pttl = math.max(redis.call('PTTL', queued), redis.call('PTTL', batch))
  redis.call('ZUNIONSTORE', batch, 2, batch, queued, 'AGGREGATE', 'MAX')
  redis.call('DEL', queued)
  if pttl > 0 then redis.call('PEXPIRE', batch, pttl) end
end
`;

/** Lua: `token` waits in the ZSET `key` until `now + lease`; the key lives as long as its longest lease. */
export const MARK = `local function mark(key, token, now, lease)
  redis.call('ZADD', key, now + lease, token)
  if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
end
`;

/**
 * A write lock on one node: the lock key free (or ours), no live reader, and no batch of readers
 * whose turn it is. A writer that must wait registers as waiting (new readers are refused while a
 * live one is registered). The uncontended case (the key free and no reader or waiter of any kind:
 * one EXISTS) costs GET, EXISTS and SET.
 *
 * A free lock key means no live reader: the marker outlives every reader lease (see READ_ACQUIRE),
 * the invariant plain locks' `SET NX` relies on too.
 *
 * KEYS: lock, readers, waiting writers, queued readers, batch, [fence counter]
 * ARGV: owner token, ttl ms, '1' to fence, waiting lease ms ('0': never register),
 *       '1' when an earlier attempt of this acquisition may have registered it
 * Returns {1, [counter]} when set, {0, ms until a retry may succeed, or -1} when blocked.
 */
export const WRITE_ACQUIRE_SCRIPT = defineScript(
  'rw-write',
  `${CLOCK}${MARK}local holder = redis.call('GET', KEYS[1])
local blocked
local now
if holder == ARGV[1] then
  blocked = nil
elseif holder and holder ~= '${READERS_MARKER}' then
  blocked = redis.call('PTTL', KEYS[1])
elseif holder or redis.call('EXISTS', KEYS[2], KEYS[5]) > 0 then
  now = clock()
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then
    blocked = tonumber(last[2]) - now
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
    if redis.call('EXISTS', KEYS[5]) == 1 then blocked = -1 end
  end
end
if blocked then
  local lease = tonumber(ARGV[4])
  if lease > 0 then mark(KEYS[3], ARGV[1], now or clock(), lease) end
  return {0, blocked}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[5] == '1' then redis.call('ZREM', KEYS[3], ARGV[1]) end
if ARGV[3] == '1' then
  redis.call('INCR', KEYS[6])
  return {1, redis.call('GET', KEYS[6])}
end
return {1}`,
);

/**
 * A read lock on one node. A reader of the batch (it waited through the write phase that just
 * ended) goes in whatever waits; one that opens the read phase on a free key publishes on the
 * batch's channel, which wakes every waiting reader. Any other reader goes in unless a writer (or
 * a plain lock) holds the key or a live writer waits; then it queues, and the release of the next
 * write lock moves the queue into the batch (see WRITE_RELEASE). A reader here already (a retry
 * after a lost reply) goes in again. Only a write lock's release fills the batch, on the nodes the
 * writer held: so a batch is the same on a quorum, and never left on a minority by an attempt that
 * failed (such batches, each reader in the batch of a different minority, blocked every writer).
 * The lease is the reader's score (node time); the lock key holds {@link READERS_MARKER} for at
 * least as long as the longest lease, so it expires with the last reader. The uncontended case
 * costs GET, EXISTS, TIME, ZADD, SET and PEXPIRE.
 *
 * KEYS: lock, readers, waiting writers, queued readers, batch, [fence counter]
 * ARGV: owner token, ttl ms, '1' to read the fence counter, waiting lease ms ('0': never register),
 *       '1' when an earlier attempt of this acquisition may have registered it
 * Returns {1, [counter]} when granted, {0, pttl or -1} when a writer holds or waits.
 */
export const READ_ACQUIRE_SCRIPT = defineNotifying(
  'rw-read',
  `${CLOCK}${MARK}local holder = redis.call('GET', KEYS[1])
local lease = tonumber(ARGV[4])
if holder and holder ~= '${READERS_MARKER}' then
  if lease > 0 then mark(KEYS[4], ARGV[1], clock(), lease) end
  return {0, redis.call('PTTL', KEYS[1])}
end
local ttl = tonumber(ARGV[2])
local now = clock()
if holder or redis.call('EXISTS', KEYS[3], KEYS[5]) > 0 then
  local batch = redis.call('ZSCORE', KEYS[5], ARGV[1])
  if batch and tonumber(batch) > now then
    redis.call('ZREM', KEYS[5], ARGV[1])
    if not holder then
      redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
      if redis.call('EXISTS', KEYS[5]) == 1 then notify(KEYS[5]) end
    end
  elseif not ((tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1])) or 0) > now) then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
    if redis.call('EXISTS', KEYS[3]) == 1 then
      if lease > 0 then mark(KEYS[4], ARGV[1], now, lease) end
      return {0, -1}
    end
  end
  if holder then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
end
if ARGV[5] == '1' then redis.call('ZREM', KEYS[4], ARGV[1]) end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if holder then
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
else
  redis.call('SET', KEYS[1], '${READERS_MARKER}', 'PX', ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if ARGV[3] == '1' then
  return {1, redis.call('GET', KEYS[6]) or '0'}
end
return {1}`,
);

/** Whether an acquisition's reply is a grant ({1, ...}). */
function granted(reply: unknown): boolean {
  return Array.isArray(reply) && Number(reply[0]) === 1;
}

function allKeys(keys: ReadWriteKeys, fenceKey: string | undefined): string[] {
  const all = [keys.lock, keys.readers, keys.writers, keys.queued, keys.batch];
  return fenceKey === undefined ? all : [...all, fenceKey];
}

/** How one acquisition attempt asks a node. */
export interface RwAttemptArgs {
  readonly token: string;
  readonly ttlMs: number;
  /** How long a refused waiter stays registered (0: it does not wait, as tryAcquire). */
  readonly waitLeaseMs: number;
  /** An earlier attempt of this acquisition may have registered it as waiting. */
  readonly waited: boolean;
}

function argv(fenceKey: string | undefined, a: RwAttemptArgs): Array<string | number> {
  return [a.token, a.ttlMs, fenceKey === undefined ? '0' : '1', a.waitLeaseMs, a.waited ? '1' : '0'];
}

/** Sends the write acquisition to one node. */
export function writeAcquireOnNode(node: LockNode, keys: ReadWriteKeys, fenceKey: string | undefined, a: RwAttemptArgs): Promise<unknown> {
  // With replicaSync, a grant counts once replicas confirmed it (WAIT, the exchange's follow-up), as for the mutex.
  const x = node.exchange();
  return synced(node, keys.lock, x.run(WRITE_ACQUIRE_SCRIPT, allKeys(keys, fenceKey), argv(fenceKey, a)), granted, x);
}

/** Sends the read acquisition to one node. */
export function readAcquireOnNode(node: LockNode, keys: ReadWriteKeys, fenceKey: string | undefined, a: RwAttemptArgs): Promise<unknown> {
  const x = node.exchange();
  const sent = x.run(formFor(node, READ_ACQUIRE_SCRIPT), allKeys(keys, fenceKey), argv(fenceKey, a));
  return synced(node, keys.lock, sent, granted, x);
}

/** Parses either acquisition's reply: the fence counter (as a string) as the value, when fencing. */
export function parseReadWriteReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  if (Number(reply[0]) === 1) return { status: 'ok', value: reply.slice(1).map(String) };
  const wait = Number(reply[1]);
  return wait > 0 ? { status: 'held', ttlMs: wait } : { status: 'held' };
}
