import { defineScript, type LockNode } from '../lock-node.js';
import type { ParsedReply } from '../round.js';

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
  return node.run(EXTEND_SCRIPT, keys, [token, ttlMs]);
}

/** `ok` when extended, `absent` when our key is no longer there. */
export function parseExtendReply(reply: unknown): ParsedReply<true> {
  return Number(reply) === 1 ? { status: 'ok', value: true } : { status: 'absent' };
}
