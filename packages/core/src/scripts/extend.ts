import { isClusterClient } from '../nodes/cluster-client.js';
import { slotGroups } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * Owner-checked extension, all-or-nothing per node. A key that is gone is NOT set
 * again: re-creating an expired lock could hand us a lock someone else held meanwhile.
 *
 * KEYS: lock keys; ARGV: owner token, ttl ms. Returns 1 when extended, 0 when not ours.
 */
export const EXTEND_SCRIPT = defineScript(
  'extend',
  `for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1`,
);

/** Sends the extend script to one node. */
export function extendOnNode(node: LockNode, keys: readonly string[], token: string, ttlMs: number): Promise<unknown> {
  // A Redis Cluster node runs it per slot; extended only if every slot was (a partial extension is harmless).
  const groups = isClusterClient(node.client) && keys.length > 1 ? slotGroups(keys, 1) : [{ keys }];
  const extended = (reply: unknown): boolean => Number(reply) === 1;
  const sent = groups.map((g) => synced(node, g.keys[0]!, node.run(EXTEND_SCRIPT, g.keys, [token, ttlMs]), extended));
  return sent.length === 1 ? sent[0]! : Promise.all(sent).then((replies) => (replies.every(extended) ? 1 : 0));
}

/** `ok` when extended, `absent` when our key is no longer there. */
export function parseExtendReply(reply: unknown): ParsedReply<true> {
  return Number(reply) === 1 ? { status: 'ok', value: true } : { status: 'absent' };
}
