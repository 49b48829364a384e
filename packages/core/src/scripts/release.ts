import { defineScript, type LockNode } from '../lock-node.js';
import type { ParsedReply } from '../round.js';

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

/** Sends the release script to one node. */
export function releaseOnNode(node: LockNode, keys: readonly string[], token: string): Promise<unknown> {
  return node.run(RELEASE_SCRIPT, keys, [token]);
}

/** `ok` when our keys were deleted, `absent` when they were already gone (expired). */
export function parseReleaseReply(reply: unknown): ParsedReply<number> {
  const released = Number(reply);
  return released > 0 ? { status: 'ok', value: released } : { status: 'absent' };
}
