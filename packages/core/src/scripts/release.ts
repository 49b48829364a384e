import { isClusterClient } from '../nodes/cluster-client.js';
import { slotGroups } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * Owner-checked delete (the release script of the Redis distributed-locks page, "Redlock"):
 * a key is deleted only if it still holds our token, so a late release never frees
 * someone else's lock. Each delete is published on a channel named after the key, which
 * waiters subscribe to.
 *
 * KEYS: lock keys; ARGV: owner token. Returns how many keys were deleted.
 */
export const RELEASE_SCRIPT = defineScript(
  'release',
  `local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('PUBLISH', KEYS[i], '1')
    released = released + 1
  end
end
return released`,
);

/**
 * The release script of Redis Cluster nodes: the notice goes out by sharded pub/sub
 * (`SPUBLISH`, Redis ≥ 7), so it reaches the key's shard only instead of every server. On an
 * older server SPUBLISH fails inside `pcall` and nothing is published (waiters there poll).
 */
export const RELEASE_SHARDED_SCRIPT = defineScript(
  'release-sharded',
  `local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.pcall('SPUBLISH', KEYS[i], '1')
    released = released + 1
  end
end
return released`,
);

/**
 * Owner-checked delete that publishes nothing: a failed attempt giving back what it was granted
 * (a semaphore's partial slots). Its notice would wake every waiting process for a permit that
 * was never usable (no quorum held it), and their attempts would split the nodes again; a real
 * release of a granted permit still publishes (RELEASE_SCRIPT).
 *
 * KEYS: keys; ARGV: owner token. Returns how many keys were deleted.
 */
export const RELEASE_QUIET_SCRIPT = defineScript(
  'release-quiet',
  `local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
  end
end
return released`,
);

/** Sends the release script to one node. */
export function releaseOnNode(node: LockNode, keys: readonly string[], token: string): Promise<unknown> {
  if (!isClusterClient(node.client)) return node.run(RELEASE_SCRIPT, keys, [token]);
  if (keys.length === 1) return node.run(RELEASE_SHARDED_SCRIPT, keys, [token]);
  // A Redis Cluster node runs it per slot: the keys released over all slots.
  const sent = slotGroups(keys, 1).map((g) => node.run(RELEASE_SHARDED_SCRIPT, g.keys, [token]));
  return Promise.all(sent).then((counts) => counts.reduce<number>((sum, c) => sum + Number(c), 0));
}

/** Sends the quiet release (no notice, see RELEASE_QUIET_SCRIPT) to one node; on a Redis Cluster node, per slot. */
export function releaseQuietlyOnNode(node: LockNode, keys: readonly string[], token: string): Promise<unknown> {
  if (!isClusterClient(node.client) || keys.length === 1) return node.run(RELEASE_QUIET_SCRIPT, keys, [token]);
  const sent = slotGroups(keys, 1).map((g) => node.run(RELEASE_QUIET_SCRIPT, g.keys, [token]));
  return Promise.all(sent).then((counts) => counts.reduce<number>((sum, c) => sum + Number(c), 0));
}

/** `ok` when our keys were deleted, `absent` when they were already gone (expired). */
export function parseReleaseReply(reply: unknown): ParsedReply<number> {
  const released = Number(reply);
  return released > 0 ? { status: 'ok', value: released } : { status: 'absent' };
}

/**
 * Releases a failed attempt's possible holds, so our own partial holds never block our retry:
 * on every node but those that answered that someone else holds the key. An `error` or a
 * timeout counts too: a reply lost on a dropped connection or a client-side timeout says nothing
 * about whether the SET landed. Sent, not awaited, on plain nodes: each runs one connection's
 * commands in order, so the release is applied before our next attempt there, without costing a
 * round trip. A Redis Cluster node gives no such order: a command redirected (ASK, MOVED), retried
 * (TRYAGAIN) or re-sent after NOSCRIPT on a master that never ran the script can land after a
 * later one, and a late release of this token would delete the next attempt's grant (same token)
 * while its holder works. The returned promise settles once the cluster nodes' releases did: the
 * next attempt waits for it. `release` sends it (a semaphore's: without a notice, see releaseQuietlyOnNode).
 */
export function releasePartialHolds(
  nodes: readonly LockNode[],
  outcomes: readonly NodeOutcome[],
  keys: readonly string[],
  token: string,
  release: (node: LockNode, keys: readonly string[], token: string) => Promise<unknown> = releaseOnNode,
): Promise<void> {
  const ordered: Array<Promise<unknown>> = [];
  for (let i = 0; i < nodes.length; i++) {
    if (outcomes[i]!.status === 'held') continue;
    const sent = release(nodes[i]!, keys, token).catch(() => undefined);
    if (isClusterClient(nodes[i]!.client)) ordered.push(sent);
  }
  return ordered.length === 0 ? Promise.resolve() : Promise.all(ordered).then(() => undefined);
}
