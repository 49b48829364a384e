/**
 * Addressed wake-ups for plain locks on plain nodes (see docs/cohorting.md, "Across processes").
 *
 * A release notice broadcast on the lock key's channel wakes one waiter in every waiting process:
 * with 8 processes on one key, 8 attempts per hand-off, 7 of which lose. Here the processes that
 * wait for a key queue on the key's arbiter node (the node every process asks first under
 * contention, see arbiter-round.ts), in a sorted set scored by when they began waiting, and the
 * release on that node wakes the head only, on its process' own channel. A process that no
 * longer listens (PUBLISH reaches nobody: it exited, or closed its Redlock) is skipped. The queue
 * is a hint for whom to wake, never part of the lock's safety: every grant is still a quorum of
 * `SET NX` on the nodes, and every waiter still polls as a safety net.
 *
 * Keys: the lock key and the resource's waiters key, `<prefix>waiters:<resource>`.
 */
import { isPermissionDenied } from '../errors/error-hints.js';
import { type LockNode } from '../nodes/lock-node.js';
import { type NodeExchange } from '../nodes/node-wire.js';
import { defineScript } from '../nodes/lua-script.js';

/** At most this many dead heads are skipped by one release (bounds the script's time). */
const MAX_SKIPPED = 16;

/**
 * Pops the queue until a head whose process listens was told (`woken`), at most MAX_SKIPPED + 1.
 * Lua, shared by the scripts below. KEYS[1] lock key, KEYS[2] waiters key; `prefix` the channel prefix.
 */
const WAKE_HEAD = `local function wake_head(prefix)
  for _ = 0, ${MAX_SKIPPED} do
    local head = redis.call('ZPOPMIN', KEYS[2])
    if #head == 0 then return 0 end
    if redis.call('PUBLISH', prefix .. head[1], KEYS[1]) > 0 then return 1 end
  end
  return 0
end
`;

/**
 * A refused `SET NX` on the arbiter, followed up: queues this process for the key's release and
 * reads the holder's PTTL. The score is the process' own: when it began waiting, kept while its
 * waiters wait (a lost race keeps its place) and new once it had the lock (an entry left from
 * before goes to the back instead of keeping a place it already used). A key that
 * holds our own token is taken back instead (a retry whose earlier release was lost, as the
 * reclaim script does). A key that is free by now is NOT taken, as the round may have ended and
 * written its release before this follow-up (see RECLAIM_SCRIPT): the process is queued all the
 * same, and `{0, -2}` tells the caller the key was free (it may attempt again at once).
 *
 * KEYS: lock key, waiters key; ARGV: owner token, ttl ms, process id, score, queue ttl ms.
 * Returns `{1}` (reclaimed), `{0, -2}` (free now, queued) or `{0, pttl}` (held, queued).
 */
export const QUEUE_SCRIPT = defineScript(
  'queue',
  `local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1}
end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if not holder then return {0, -2} end
return {0, redis.call('PTTL', KEYS[1])}`,
);

/**
 * Owner-checked delete without a notice: the release on nodes other than the key's arbiter
 * (their notices would only wake waiters the arbiter's release wakes already).
 *
 * KEYS: lock key; ARGV: owner token. Returns 1 when deleted.
 */
export const UNLOCK_SCRIPT = defineScript(
  'unlock',
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`,
);

/**
 * The release on the key's arbiter: owner-checked delete, then, once the key is free, the head
 * of the queue is woken on its process' channel. When nobody queued was woken, a plain notice
 * goes out on the lock key's channel, for waiters that do not queue (read-write and semaphore
 * waiters on the same resource, multi-resource locks, processes of an earlier version). With
 * `requeue` this process queues again first, behind the others (it still has waiters of its own:
 * they wait for their turn after the processes queued before them, or take it now if none is).
 * Without `wake` nobody is woken: a failed attempt giving back its grant on the arbiter, while
 * the lock is held on the other nodes (their holder's release wakes the head).
 *
 * KEYS: lock key, waiters key; ARGV: owner token, channel prefix, requeue id ('' for none),
 * its score, queue ttl ms, '1' to wake. Returns 1 when our key was deleted, 0 when it was gone or not ours.
 */
export const UNLOCK_WAKE_SCRIPT = defineScript(
  'unlock-wake',
  `${WAKE_HEAD}local holder = redis.call('GET', KEYS[1])
local released = 0
if holder == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
-- Queued again first: with nobody else queued, our own next waiter is the head.
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
-- Someone else's key (ours expired and was taken): its holder's release wakes the next head.
if ARGV[6] == '1' and (released == 1 or not holder) and wake_head(ARGV[2]) == 0 then redis.call('PUBLISH', KEYS[1], '1') end
return released`,
);

/**
 * A process was woken for a key that none of its acquisitions waits for any more (they timed
 * out, were aborted, or got the lock another way): it passes the turn to the next head, if the
 * key is still free (a holder's own release wakes the next head otherwise). With nobody queued
 * left, a plain notice goes out on the key's channel, as the release's would have.
 *
 * KEYS: lock key, waiters key; ARGV: channel prefix. Returns 1 when someone was woken.
 */
export const PASS_SCRIPT = defineScript(
  'pass',
  `${WAKE_HEAD}if redis.call('GET', KEYS[1]) then return 0 end
if wake_head(ARGV[1]) == 1 then return 1 end
redis.call('PUBLISH', KEYS[1], '1')
return 0`,
);

/**
 * How many processes wait for the key (queued on its arbiter), for a cohort deciding whether to
 * give the lock back (lock-cohort.ts): every entry but the asking process' own (which may still
 * be there from before it won, or be there again for its own waiters). A script rather than the
 * commands themselves: every client kind runs scripts, not every one sends arbitrary commands.
 *
 * KEYS: waiters key; ARGV: the asking process' id ('' to count every entry). Returns the count.
 */
export const WAITERS_SCRIPT = defineScript(
  'waiters',
  `local n = redis.call('ZCARD', KEYS[1])
if ARGV[1] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then n = n - 1 end
return n`,
);

/**
 * A process none of whose acquisitions waits for the key any more (they failed, timed out or
 * were aborted, or its Redlock closes) leaves the queue: no release wakes it for nothing, and
 * no entry outlives its last waiter.
 *
 * KEYS: waiters key; ARGV: the process' id. Returns 1 when an entry was removed.
 */
export const LEAVE_SCRIPT = defineScript('leave', `return redis.call('ZREM', KEYS[1], ARGV[1])`);

/** Where a process queues and is woken: the settings shared by every script call above. */
export interface WakeQueue {
  /** This process' id: its member in the queues, and the suffix of its channel. */
  readonly id: string;
  /** Channel prefix: a process listens on `prefix + id`. */
  readonly prefix: string;
  /** The waiters key of a lock key. */
  waitersKey(lockKey: string): string;
}

/**
 * How long a queue lives after its last change: a process that queued and died, with no release
 * after it (the lock expired instead), leaves an entry nobody pops. Long past any fallback poll.
 */
const QUEUE_TTL_MS = 60_000;

/** The follow-up of a refused `SET NX` on the arbiter (one exchange with the node, see acquireOnNode). */
export function queueOnNode(x: NodeExchange, q: WakeQueue, key: string, token: string, ttlMs: number, score: number): Promise<unknown> {
  return x.run(QUEUE_SCRIPT, [key, q.waitersKey(key)], [token, ttlMs, q.id, score, Math.max(QUEUE_TTL_MS, ttlMs)]);
}

/** Releases a plain lock's key on one node; on the arbiter, wakes the next process too. */
export function unlockOnNode(
  node: LockNode,
  key: string,
  token: string,
  wake: { readonly queue: WakeQueue; readonly requeueScore: number | undefined; readonly next?: boolean } | undefined,
): Promise<unknown> {
  if (!wake) return node.run(UNLOCK_SCRIPT, [key], [token]);
  const { queue, requeueScore } = wake;
  const requeue = requeueScore === undefined ? ['', 0] : [queue.id, requeueScore];
  const args = [token, queue.prefix, ...requeue, QUEUE_TTL_MS, wake.next === false ? '0' : '1'];
  return node.run(UNLOCK_WAKE_SCRIPT, [key, queue.waitersKey(key)], args);
}

/** Passes a turn this process has no use for (see PASS_SCRIPT). */
export function passTurnOnNode(node: LockNode, q: WakeQueue, key: string): Promise<unknown> {
  return node.run(PASS_SCRIPT, [key, q.waitersKey(key)], [q.prefix]);
}

/** Takes this process out of `key`'s queue on `node` (see LEAVE_SCRIPT). */
export function leaveQueueOnNode(node: LockNode, q: WakeQueue, key: string): Promise<unknown> {
  return node.run(LEAVE_SCRIPT, [q.waitersKey(key)], [q.id]);
}

/** How many other processes are queued for `key` on `node` (see WAITERS_SCRIPT). */
export function waitersOnNode(node: LockNode, q: WakeQueue, key: string): Promise<number> {
  return node.run(WAITERS_SCRIPT, [q.waitersKey(key)], [q.id]).then(Number);
}

/**
 * Whether a wake-up script failed because the ACL user may not run a command it calls (`NOPERM`):
 * the Redlock then falls back to release notices on the key, and warns once how to fix the ACL.
 */
export function isDenied(err: unknown): boolean {
  return err instanceof Error && isPermissionDenied(err.message);
}
