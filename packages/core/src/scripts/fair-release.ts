import { defineScript, type LockNode } from '../lock-node.js';

/**
 * Owner-checked release of a fair lock, handing over to the head of the node's queue: the
 * key is deleted only if it holds our token (as the mutex's release), and once it is free
 * the head's process is told on its own notice channel, the message naming the head, so
 * exactly that waiter attempts and no other waiter races it.
 *
 * KEYS: lock key, queue key; ARGV: owner token, notice channel prefix (the process id is appended).
 * Returns 1 when our key was deleted, 0 when it was gone (expired) or someone else's.
 */
export const FAIR_RELEASE_SCRIPT = defineScript(
  'fair-release',
  `local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
local released = 0
if holder then
  redis.call('DEL', KEYS[1])
  released = 1
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if head then redis.call('PUBLISH', ARGV[2] .. string.match(head, '^[^:]*'), head) end
return released`,
);

/** Sends the fair release to one node. */
export function fairReleaseOnNode(
  node: LockNode,
  lockKey: string,
  queueKey: string,
  token: string,
  noticePrefix: string,
): Promise<unknown> {
  return node.run(FAIR_RELEASE_SCRIPT, [lockKey, queueKey], [token, noticePrefix]);
}

/**
 * A waiter gives up (timeout, abort, close): it leaves the queue, and when it was the head
 * and the key is free, the next head is told, so its place passes on without a poll.
 *
 * KEYS: lock key, queue key; ARGV: waiter id, notice channel prefix. Returns 1 when it was queued.
 */
export const FAIR_LEAVE_SCRIPT = defineScript(
  'fair-leave',
  `local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
if head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if head then redis.call('PUBLISH', ARGV[2] .. string.match(head, '^[^:]*'), head) end
end
return 1`,
);

/** Sends the leave script to one node. */
export function fairLeaveOnNode(node: LockNode, lockKey: string, queueKey: string, waiter: string, noticePrefix: string): Promise<unknown> {
  return node.run(FAIR_LEAVE_SCRIPT, [lockKey, queueKey], [waiter, noticePrefix]);
}
