import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import type { ParsedReply } from '../rounds/round.js';

/**
 * Takes one permit of a semaphore on one node. A semaphore of N permits is N slots, each
 * a mutex key (`SET token PX ttl`); a holder needs the SAME slot on a quorum, so each slot
 * is a Redlock mutex and at most N holders can be valid at once (see docs/primitives.md).
 *
 * The scan starts at a slot the caller picked at random for this attempt and is the same
 * on every node: nodes in the same state pick the same slot, and concurrent acquirers
 * usually start at different slots. A slot already holding our token (a retry after a
 * lost reply) is taken again. With a count of 1 only the first slot is tried: the other
 * nodes of an arbitrated attempt are asked for the very slot its arbiter granted.
 *
 * KEYS: the N slot keys; ARGV: owner token, ttl ms, first slot to try (0-based), how many
 * slots to try from there (optional, default all N).
 * Returns {1, slot} when a slot was set, {0, smallest pttl of the slots tried} when all are held.
 */
export const SEMAPHORE_ACQUIRE_SCRIPT = defineScript(
  'semaphore',
  `local n = #KEYS
local first = tonumber(ARGV[3])
local count = tonumber(ARGV[4]) or n
local free = nil
for j = 0, count - 1 do
  local i = (first + j) % n + 1
  local holder = redis.call('GET', KEYS[i])
  if holder == ARGV[1] then
    free = i
    break
  end
  if not holder and not free then free = i end
end
if free then
  redis.call('SET', KEYS[free], ARGV[1], 'PX', ARGV[2])
  return {1, free - 1}
end
local soonest = -1
for j = 0, count - 1 do
  local pttl = redis.call('PTTL', KEYS[(first + j) % n + 1])
  if pttl > 0 and (soonest < 0 or pttl < soonest) then soonest = pttl end
end
return {0, soonest}`,
);

/**
 * What one node is asked for a permit:
 * - `try-first`: the slot picked first with a plain `SET NX` (no Lua: the common case while the
 *   semaphore is not full, as for the mutex); only when it is taken does the script scan the
 *   others (it also takes a slot already holding our token, which `SET NX` refuses). An
 *   acquisition's first attempt.
 * - `scan`: the script at once (retries, which mean the semaphore was full).
 * - `only`: that one slot (`SET NX`, then the script on that slot alone when refused, for our own
 *   token or the holder's PTTL): the other nodes of an arbitrated attempt, asked for the slot
 *   the arbiter granted.
 */
export type SlotRequest = 'try-first' | 'scan' | 'only';

/** Sends the permit acquisition to one node (see {@link SlotRequest}). */
export function semaphoreAcquireOnNode(
  node: LockNode,
  slotKeys: readonly string[],
  token: string,
  ttlMs: number,
  first: number,
  request: SlotRequest,
): Promise<unknown> {
  // With replicaSync, a grant counts once replicas confirmed it (WAIT; every slot key is in the resource's slot).
  // One exchange: the scan (and a WAIT) are the round's follow-ups, not new commands the node is late on.
  const x = node.exchange();
  if (request === 'scan') return synced(node, slotKeys[0]!, x.run(SEMAPHORE_ACQUIRE_SCRIPT, slotKeys, [token, ttlMs, first]), granted, x);
  const key = slotKeys[first]!;
  const args = request === 'only' ? [token, ttlMs, first, 1] : [token, ttlMs, first];
  const sent = x
    .call((client) => client.set(key, token, 'PX', ttlMs, 'NX'))
    .then((reply) => (reply === 'OK' ? [1, first] : x.run(SEMAPHORE_ACQUIRE_SCRIPT, slotKeys, args)));
  return synced(node, key, sent, granted, x);
}

function granted(reply: unknown): boolean {
  return Array.isArray(reply) && Number(reply[0]) === 1;
}

/** The slot the node granted as the value (a one-element array, the shape rounds of acquisitions carry). */
export function parseSemaphoreReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  if (Number(reply[0]) === 1) return { status: 'ok', value: [String(reply[1])] };
  const pttl = Number(reply[1]);
  return pttl > 0 ? { status: 'held', ttlMs: pttl } : { status: 'held' };
}
