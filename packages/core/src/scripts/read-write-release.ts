/**
 * Releases, extensions and withdrawals of read-write locks (their acquisitions and keys:
 * read-write.ts). Who is told what, so that nobody polls for a phase change:
 * - a writer's release makes the readers queued during its phase the batch and publishes on the
 *   batch's channel (every waiting reader wakes); with no batch, on the waiting writers' channel
 *   and the lock key;
 * - the last reader out publishes on the waiting writers' channel and the lock key;
 * - a writer that gave up and was the last one waiting publishes on the batch's channel (readers
 *   queued behind it may go in), and a reader that gave up and emptied the batch publishes on the
 *   waiting writers' channel and the lock key.
 * Channels are named after the keys, as the mutex's release notice is named after its lock key.
 */
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import { CLOCK, defineNotifying, formFor, MARK, PROMOTE, READERS_MARKER, type ReadWriteKeys } from './read-write.js';

/**
 * Owner-checked release of a write lock: the readers queued during its phase (refused while it
 * held or waited) become the batch. When that batch has a live reader, the key is kept for it: it
 * becomes the readers' marker until the batch's longest lease ends, so neither a plain lock nor a
 * writer takes it before them, and the batch is told (every waiting reader wakes). Otherwise the
 * key is deleted, and waiting writers and plain waiters are told. The uncontended case costs GET,
 * EXISTS, DEL and two PUBLISH.
 *
 * KEYS: lock, waiting writers, queued readers, batch; ARGV: owner token. Returns 1 when ours was released, 0 otherwise.
 */
export const WRITE_RELEASE_SCRIPT = defineNotifying(
  'rw-write-release',
  `${CLOCK}${PROMOTE}if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
  promote(KEYS[3], KEYS[4])
  local now = clock()
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('SET', KEYS[1], '${READERS_MARKER}', 'PX', math.max(1, tonumber(last[2]) - now))
    notify(KEYS[4])
    return 1
  end
end
redis.call('DEL', KEYS[1])
notify(KEYS[2])
notify(KEYS[1])
return 1`,
);

/**
 * Lua: removes reader ARGV[1]'s lease (KEYS[1] lock, KEYS[2] readers, `batch` the batch, `now`).
 * The marker is shortened to the longest remaining lease. The last reader out keeps it for the
 * readers of the batch still on their way (until their longest lease ends: a plain lock taking the
 * key now would make them miss their turn on this node, and with it their quorum), otherwise
 * deletes it and calls `freed()`. Returns the lease's score, or nil when it was not there.
 */
const LEAVE = `local function leave(batch, now, freed)
  local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
  if not score then return nil end
  redis.call('ZREM', KEYS[2], ARGV[1])
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  local marked = redis.call('GET', KEYS[1]) == '${READERS_MARKER}'
  if last[2] and tonumber(last[2]) > now then
    local left = tonumber(last[2]) - now
    if marked then redis.call('PEXPIRE', KEYS[1], left) end
    redis.call('PEXPIRE', KEYS[2], left)
    return score
  end
  if last[2] then redis.call('DEL', KEYS[2]) end
  if not marked then return score end
  if redis.call('EXISTS', batch) == 1 then
    redis.call('ZREMRANGEBYSCORE', batch, '-inf', now)
    local waiting = redis.call('ZRANGE', batch, -1, -1, 'WITHSCORES')
    if waiting[2] then
      redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(waiting[2]) - now))
      return score
    end
  end
  redis.call('DEL', KEYS[1])
  freed()
  return score
end
`;

/**
 * Owner-checked release of a reader's lease (see LEAVE); the last reader out tells waiting
 * writers and plain waiters.
 *
 * KEYS: lock, readers, waiting writers, batch; ARGV: owner token. Returns 1 when our lease was live, 0 otherwise.
 */
export const READ_RELEASE_SCRIPT = defineNotifying(
  'rw-read-release',
  `${CLOCK}${LEAVE}local now = clock()
local score = leave(KEYS[4], now, function()
  notify(KEYS[3])
  notify(KEYS[1])
end)
if score and tonumber(score) > now then return 1 end
return 0`,
);

/**
 * Owner-checked extension of a reader's lease. A lease that already ended is not renewed
 * (a writer may have held the resource since). The marker is only ever lengthened.
 *
 * KEYS: lock key, readers ZSET; ARGV: owner token, ttl ms. Returns 1 when extended, 0 when not ours.
 */
export const READ_EXTEND_SCRIPT = defineScript(
  'rw-read-extend',
  `${CLOCK}local now = clock()
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) <= now or redis.call('GET', KEYS[1]) ~= '${READERS_MARKER}' then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1`,
);

/**
 * A failed read attempt that will retry gives back its lease on a node and queues there (see
 * LEAVE), as a refused attempt does: it goes in with the next batch, or at once when no writer
 * waits. It never rejoins the batch: a batch kept alive by retries on a minority of nodes would
 * block every writer there while its reader cannot get a quorum. No notice (a failed attempt
 * frees nothing for long: it retries).
 *
 * KEYS: lock, readers, queued readers, batch; ARGV: owner token, waiting lease ms. Returns 1 when our lease was there.
 */
export const READ_YIELD_SCRIPT = defineScript(
  'rw-read-yield',
  `${CLOCK}${LEAVE}${MARK}local now = clock()
local score = leave(KEYS[4], now, function() end)
mark(KEYS[3], ARGV[1], now, tonumber(ARGV[2]))
if score then return 1 end
return 0`,
);

/**
 * A reader that stops waiting (it gave up, or won on a quorum elsewhere) leaves the queued readers
 * and the batch. When that emptied the batch, a marker kept for it with no reader inside is
 * deleted, and a free key is announced to waiting writers and plain waiters.
 *
 * KEYS: lock, readers, waiting writers, queued readers, batch; ARGV: owner token. Returns 1 when it was waiting.
 */
export const READ_ABANDON_SCRIPT = defineNotifying(
  'rw-read-abandon',
  `${CLOCK}local queued = redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('ZREM', KEYS[5], ARGV[1]) == 0 then return queued end
local now = clock()
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
if redis.call('EXISTS', KEYS[5]) == 1 then return 1 end
local holder = redis.call('GET', KEYS[1])
if holder == '${READERS_MARKER}' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
  redis.call('DEL', KEYS[1])
  holder = false
end
if not holder then
  notify(KEYS[3])
  notify(KEYS[1])
end
return 1`,
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
  `${CLOCK}local now = clock()
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

/**
 * A writer that stops waiting (it gave up, or won on a quorum elsewhere) leaves the waiting
 * writers. When it was the last live one, the readers queued behind it may go in: the batch's
 * channel wakes them.
 *
 * KEYS: waiting writers, batch (its channel); ARGV: owner token. Returns 1 when it was waiting.
 */
export const WRITE_ABANDON_SCRIPT = defineNotifying(
  'rw-write-abandon',
  `${CLOCK}if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', clock())
if redis.call('EXISTS', KEYS[1]) == 0 then notify(KEYS[2]) end
return 1`,
);

/** A write lock's release on one node. */
export function writeReleaseOnNode(node: LockNode, keys: ReadWriteKeys, token: string): Promise<unknown> {
  return node.run(formFor(node, WRITE_RELEASE_SCRIPT), [keys.lock, keys.writers, keys.queued, keys.batch], [token]);
}

/** A reader's release on one node. */
export function readReleaseOnNode(node: LockNode, keys: ReadWriteKeys, token: string): Promise<unknown> {
  return node.run(formFor(node, READ_RELEASE_SCRIPT), [keys.lock, keys.readers, keys.writers, keys.batch], [token]);
}

/** A reader's extension on one node. */
export function readExtendOnNode(node: LockNode, keys: ReadWriteKeys, token: string, ttlMs: number): Promise<unknown> {
  const x = node.exchange();
  return synced(node, keys.lock, x.run(READ_EXTEND_SCRIPT, [keys.lock, keys.readers], [token, ttlMs]), (reply) => Number(reply) === 1, x);
}

/** A failed read attempt's yield on one node: our lease given back, and queued for `leaseMs`. */
export function readYieldOnNode(node: LockNode, keys: ReadWriteKeys, token: string, leaseMs: number): Promise<unknown> {
  return node.run(READ_YIELD_SCRIPT, [keys.lock, keys.readers, keys.queued, keys.batch], [token, leaseMs]);
}

/** Withdraws a waiting reader on one node. */
export function abandonReadOnNode(node: LockNode, keys: ReadWriteKeys, token: string): Promise<unknown> {
  const all = [keys.lock, keys.readers, keys.writers, keys.queued, keys.batch];
  return node.run(formFor(node, READ_ABANDON_SCRIPT), all, [token]);
}

/** A failed write attempt's yield on one node: our key released, and waiting there for `leaseMs`. */
export function writeYieldOnNode(node: LockNode, keys: ReadWriteKeys, token: string, leaseMs: number): Promise<unknown> {
  return node.run(WRITE_YIELD_SCRIPT, [keys.lock, keys.writers], [token, leaseMs]);
}

/** Withdraws a waiting writer on one node. */
export function abandonWriteOnNode(node: LockNode, keys: ReadWriteKeys, token: string): Promise<unknown> {
  return node.run(formFor(node, WRITE_ABANDON_SCRIPT), [keys.writers, keys.batch], [token]);
}
