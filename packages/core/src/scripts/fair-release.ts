import { isClusterClient } from '../nodes/cluster-client.js';
import type { ClusterNodeClient } from '../nodes/node-client.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';

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

/**
 * The fair release of Redis Cluster nodes. A script may publish only on a channel of its own
 * slot there (SPUBLISH to another shard fails: "non local key"), and the head's notice channel
 * is its process', in whatever slot. So the script returns the head, and the client sends the
 * notice by sharded pub/sub itself: one more command, only when someone waits. A notice lost
 * that way (the releaser dies in between) costs the head its poll delay, like any lost notice.
 *
 * KEYS: lock key, queue key; ARGV: owner token. Returns {1 or 0 as the plain script, the head or nil}.
 */
export const FAIR_RELEASE_CLUSTER_SCRIPT = defineScript(
  'fair-release-cluster',
  `local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {0, false} end
local released = 0
if holder then
  redis.call('DEL', KEYS[1])
  released = 1
end
return {released, redis.call('ZRANGE', KEYS[2], 0, 0)[1] or false}`,
);

/** Tells `head` (a waiter id) on its process' notice channel, from the client (Redis Cluster nodes). */
function noticeFromClient(node: LockNode, noticePrefix: string, head: unknown): void {
  if (typeof head !== 'string') return;
  const channel = noticePrefix + head.slice(0, head.indexOf(':'));
  node.call((client) => (client as ClusterNodeClient).spublish(channel, head)).catch(() => undefined);
}

/** Sends the fair release to one node. */
export function fairReleaseOnNode(
  node: LockNode,
  lockKey: string,
  queueKey: string,
  token: string,
  noticePrefix: string,
): Promise<unknown> {
  if (!isClusterClient(node.client)) return node.run(FAIR_RELEASE_SCRIPT, [lockKey, queueKey], [token, noticePrefix]);
  return node.run(FAIR_RELEASE_CLUSTER_SCRIPT, [lockKey, queueKey], [token]).then((reply) => {
    const [released, head] = reply as [number, unknown];
    noticeFromClient(node, noticePrefix, head);
    return released;
  });
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

/**
 * The leave script of Redis Cluster nodes: returns the next head to tell instead of publishing
 * (see FAIR_RELEASE_CLUSTER_SCRIPT). KEYS: lock key, queue key; ARGV: waiter id.
 * Returns {1 when it was queued, else 0; the head to tell or nil}.
 */
export const FAIR_LEAVE_CLUSTER_SCRIPT = defineScript(
  'fair-leave-cluster',
  `local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return {0, false} end
if head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  return {1, redis.call('ZRANGE', KEYS[2], 0, 0)[1] or false}
end
return {1, false}`,
);

/** Sends the leave script to one node. */
export function fairLeaveOnNode(node: LockNode, lockKey: string, queueKey: string, waiter: string, noticePrefix: string): Promise<unknown> {
  if (!isClusterClient(node.client)) return node.run(FAIR_LEAVE_SCRIPT, [lockKey, queueKey], [waiter, noticePrefix]);
  return node.run(FAIR_LEAVE_CLUSTER_SCRIPT, [lockKey, queueKey], [waiter]).then((reply) => {
    const [left, head] = reply as [number, unknown];
    noticeFromClient(node, noticePrefix, head);
    return left;
  });
}
