import { isClusterClient } from '../nodes/cluster-client.js';
import { slotGroups } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * A fresh fencing token for a lock already held (`Lock.fence()`), owner-checked: the
 * counters are incremented only on a node where every lock key still holds our owner
 * token, so a node that lost our key (expired, restarted, taken over) adds nothing.
 * Counters are read back with GET, as in the acquire script (values above 2^53).
 *
 * KEYS: n lock keys, then n fence-counter keys; ARGV: owner token.
 * Returns {1, counter...} when ours, {0} when not.
 */
export const FENCE_HELD_SCRIPT = defineScript(
  'fence-held',
  `local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return {0} end
end
local reply = {1}
for i = 1, n do
  redis.call('INCR', KEYS[n + i])
  reply[#reply + 1] = redis.call('GET', KEYS[n + i])
end
return reply`,
);

/** Sends the owner-checked increment to one node. */
export function fenceHeldOnNode(node: LockNode, keys: readonly string[], fenceKeys: readonly string[], token: string): Promise<unknown> {
  const all = [...keys, ...fenceKeys];
  const ours = (reply: unknown): boolean => Array.isArray(reply) && Number(reply[0]) === 1;
  const groups = isClusterClient(node.client) && keys.length > 1 ? slotGroups(all, 2) : [{ indices: keys.map((_, i) => i), keys: all }];
  const sent = groups.map((g) => synced(node, g.keys[0]!, node.run(FENCE_HELD_SCRIPT, g.keys, [token]), ours));
  if (sent.length === 1) return sent[0]!;
  // A Redis Cluster node, per slot: ours only if every slot is; counters back in resource order.
  return Promise.all(sent).then((replies) => {
    if (!replies.every(ours)) return [0];
    const counters: unknown[] = [];
    groups.forEach((g, k) => g.indices.forEach((r, j) => (counters[r] = (replies[k] as unknown[])[1 + j])));
    return [1, ...counters];
  });
}

/** The counters (strings) on success; `absent` when the node no longer holds our key. */
export function parseFenceHeldReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  return Number(reply[0]) === 1 ? { status: 'ok', value: reply.slice(1).map(String) } : { status: 'absent' };
}
