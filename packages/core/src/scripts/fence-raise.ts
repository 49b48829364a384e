import { isClusterClient } from '../nodes/cluster-client.js';
import { slotGroups } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * The fencing write-back: raise each counter to at least the given decimal value.
 * Compared as decimal strings (length, then lexically) so no precision is lost.
 *
 * KEYS: fence-counter keys; ARGV: the token for each key, in order. Returns 1.
 */
export const FENCE_RAISE_SCRIPT = defineScript(
  'fence-raise',
  `for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  local v = ARGV[i]
  if not cur or #cur < #v or (#cur == #v and cur < v) then
    redis.call('SET', KEYS[i], v)
  end
end
return 1`,
);

/** Sends the write-back to one node. */
export function raiseFenceOnNode(node: LockNode, fenceKeys: readonly string[], tokens: readonly string[]): Promise<unknown> {
  if (!isClusterClient(node.client) || fenceKeys.length === 1) return node.run(FENCE_RAISE_SCRIPT, fenceKeys, tokens);
  // A Redis Cluster node runs it per slot.
  const sent = slotGroups(fenceKeys, 1).map((g) =>
    node.run(
      FENCE_RAISE_SCRIPT,
      g.keys,
      g.indices.map((i) => tokens[i]!),
    ),
  );
  return Promise.all(sent).then((replies) => (replies.every((r) => Number(r) === 1) ? 1 : 0));
}

export function parseRaiseReply(reply: unknown): ParsedReply<true> {
  return Number(reply) === 1 ? { status: 'ok', value: true } : { status: 'error' };
}
