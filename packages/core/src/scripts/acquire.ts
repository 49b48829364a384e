import { isClusterClient } from '../cluster-client.js';
import { slotGroups, type SlotGroup } from '../hash-slot.js';
import { defineScript, type LockNode, type NodeExchange } from '../lock-node.js';
import { synced } from '../replica-sync.js';
import type { ParsedReply } from '../round.js';
import { releaseOnNode } from './release.js';

/**
 * All-or-nothing on one node: every key is free (or already ours) or nothing is set.
 * Accepting our own token makes a retry after a timed-out SET harmless.
 * With fencing, each resource's counter is INCRemented and returned as a string
 * (read back with GET) so values above 2^53 survive Lua's doubles and the client.
 *
 * KEYS: n lock keys, then n fence-counter keys when fencing
 * ARGV: owner token, ttl ms, '1' to fence
 * Returns {1, counter...} when set, {0, pttl of the first foreign key} when held.
 */
export const ACQUIRE_SCRIPT = defineScript(
  'acquire',
  `local fencing = ARGV[3] == '1'
local n = #KEYS
if fencing then n = n / 2 end
for i = 1, n do
  local holder = redis.call('GET', KEYS[i])
  if holder and holder ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
local reply = {1}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if fencing then
    redis.call('INCR', KEYS[n + i])
    reply[#reply + 1] = redis.call('GET', KEYS[n + i])
  end
end
return reply`,
);

/**
 * A retry's follow-up after a refused `SET NX`: takes back a key that holds our own token
 * (new TTL), and never a free one. The round may have ended meanwhile and sent its release,
 * written before this follow-up: a script that took a free key would then set a key nobody
 * holds, left until its TTL. Replies as the acquire script: `{1}` or `{0, pttl}`.
 *
 * KEYS: the lock key; ARGV: owner token, ttl ms
 */
export const RECLAIM_SCRIPT = defineScript(
  'reclaim',
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1}
end
return {0, redis.call('PTTL', KEYS[1])}`,
);

const SET_REPLY = Object.freeze([1]);

/**
 * Acquires on one node. One key without fencing (the common case) is a plain
 * `SET key token PX ttl NX`: the same all-or-nothing on one key as the script, without
 * running Lua on every node (measurably the largest server-side cost of an acquire).
 * Only when the key is held is it looked at again, as the exchange's follow-up: its PTTL,
 * for the caller's retry-after hint, on a first attempt; {@link RECLAIM_SCRIPT} on a retry
 * (`reclaim`). SET NX does not take a key that already holds our own token, and a retry's
 * token is its first attempt's: a key of ours is left there when the release of a failed
 * attempt was lost (a reply timed out on our side while the script was not run, a dropped
 * connection). The script takes it back (owner-checked, new TTL) instead of reading the node
 * as held by someone else until the key expires.
 *
 * Replies as the script does: `[1, counter...]` when set, `[0, pttl]` when held.
 */
export function acquireOnNode(
  node: LockNode,
  keys: readonly string[],
  token: string,
  ttlMs: number,
  fencing: boolean,
  reclaim = false,
): Promise<unknown> {
  const groups = isClusterClient(node.client) && keys.length > (fencing ? 2 : 1) ? slotGroups(keys, fencing ? 2 : 1) : undefined;
  if (groups && groups.length > 1) return acquireAcrossSlots(node, groups, token, ttlMs, fencing);
  // With replicaSync, a grant counts once replicas confirmed it (WAIT on the same connection).
  // One exchange: the follow-up after a refused SET, and the WAIT, are the round's follow-ups.
  const x = node.exchange();
  return synced(node, keys[0]!, acquireInOneSlot(x, keys, token, ttlMs, fencing, reclaim), isGrant, x);
}

function isGrant(reply: unknown): boolean {
  return Array.isArray(reply) && Number(reply[0]) === 1;
}

function acquireInOneSlot(
  x: NodeExchange,
  keys: readonly string[],
  token: string,
  ttlMs: number,
  fencing: boolean,
  reclaim: boolean,
): Promise<unknown> {
  const args = [token, ttlMs, fencing ? '1' : '0'];
  if (keys.length !== 1 || fencing) return x.run(ACQUIRE_SCRIPT, keys, args);
  const key = keys[0]!;
  return x
    .call((client) => client.set(key, token, 'PX', ttlMs, 'NX'))
    .then((reply) => {
      if (reply === 'OK') return SET_REPLY;
      if (reclaim) return x.run(RECLAIM_SCRIPT, keys, [token, ttlMs]);
      return x
        .call((client) => client.pttl(key))
        .then(
          (pttl) => [0, pttl],
          () => [0, -1], // held all the same; only the hint is missing
        );
    });
}

/**
 * A Redis Cluster node whose resources fall in different slots: one script per slot, and
 * all-or-nothing on the node as a whole. When some slot is held (or fails), what was set in
 * the others is released before the node answers, so a held node leaves nothing of ours
 * behind (a failed one is also released by the round, like any failed node). Not atomic across
 * slots: two contenders may each win some slots, then both release and retry with jitter.
 * Replies as the script does, counters in resource order.
 */
async function acquireAcrossSlots(
  node: LockNode,
  groups: readonly SlotGroup[],
  token: string,
  ttlMs: number,
  fencing: boolean,
): Promise<unknown> {
  const settled = await Promise.allSettled(
    groups.map((g) => synced(node, g.keys[0]!, node.run(ACQUIRE_SCRIPT, g.keys, [token, ttlMs, fencing ? '1' : '0']), isGrant)),
  );
  const replies = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  if (replies.every(isGrant)) {
    const counters: unknown[] = [];
    groups.forEach((g, k) => g.indices.forEach((r, j) => (counters[r] = (replies[k] as unknown[])[1 + j])));
    return [1, ...counters];
  }
  // A slot that granted (or whose reply was lost) may hold our key: release it (owner-checked),
  // and answer only once that settled, so a retry with this token is not overtaken by it.
  await Promise.all(
    groups.map((g, k) =>
      !Array.isArray(replies[k]) || isGrant(replies[k])
        ? releaseOnNode(node, g.keys.slice(0, g.indices.length), token).catch(() => undefined)
        : Promise.resolve(),
    ),
  );
  const held = replies.find((r) => Array.isArray(r) && !isGrant(r));
  if (held) return held;
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  throw failed?.reason instanceof Error ? failed.reason : new Error(`a slot's acquire failed: ${String(failed?.reason)}`);
}

/** Parses the acquire reply: the fence counters (strings) as the value on success. */
export function parseAcquireReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  if (Number(reply[0]) === 1) return { status: 'ok', value: reply.slice(1).map(String) };
  const pttl = Number(reply[1]);
  return pttl > 0 ? { status: 'held', ttlMs: pttl } : { status: 'held' };
}
