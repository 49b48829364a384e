import { isClusterClient } from '../nodes/cluster-client.js';
import { slotGroups, type SlotGroup } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { type NodeExchange } from '../nodes/node-wire.js';
import { defineScript } from '../nodes/lua-script.js';
import { synced } from '../nodes/replica-sync.js';
import type { ParsedReply } from '../rounds/round.js';
import { releaseOnNode } from './release.js';
import { isDenied, queueOnNode, type WakeQueue } from './wake-queue.js';

/**
 * On the key's arbiter, with addressed wake-ups: a refused `SET NX` queues this process for the
 * key's release (see scripts/wake-queue.ts), and says how it went.
 */
export interface QueueFollowUp {
  readonly queue: WakeQueue;
  /** The score to queue with (read only when the SET was refused). */
  score(): number;
  /** Queued: the key is held by someone else. */
  queued(): void;
  /** The key was free by the time the follow-up looked: attempt again without waiting. */
  free(): void;
  /**
   * A failed attempt that was granted on the arbiter gives that grant back: the score this process
   * queues again with, keeping its place (marked queued: the release queues it before waking the head).
   */
  requeue(): number;
  /** The ACL user may not queue (NOPERM): the Redlock falls back to release notices on the key. */
  denied(err: unknown): void;
}

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
  queue?: QueueFollowUp,
): Promise<unknown> {
  const groups = isClusterClient(node.client) && keys.length > (fencing ? 2 : 1) ? slotGroups(keys, fencing ? 2 : 1) : undefined;
  if (groups && groups.length > 1) return acquireAcrossSlots(node, groups, token, ttlMs, fencing);
  // With replicaSync, a grant counts once replicas confirmed it (WAIT on the same connection).
  // One exchange: the follow-up after a refused SET, and the WAIT, are the round's follow-ups.
  const x = node.exchange();
  return synced(node, keys[0]!, acquireInOneSlot(x, keys, token, ttlMs, fencing, reclaim, queue), isGrant, x);
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
  queue: QueueFollowUp | undefined,
): Promise<unknown> {
  const args = [token, ttlMs, fencing ? '1' : '0'];
  if (keys.length !== 1 || fencing) {
    const scripted = x.run(ACQUIRE_SCRIPT, keys, args);
    // A fenced lock of one resource queues too, after its script was refused (one more round trip, only then).
    if (!queue || keys.length !== (fencing ? 2 : 1)) return scripted;
    return scripted.then((reply) => (isGrant(reply) ? reply : queueFollowUp(x, queue, keys[0]!, token, ttlMs, true)));
  }
  const key = keys[0]!;
  return x
    .call((client) => client.set(key, token, 'PX', ttlMs, 'NX'))
    .then((reply) => {
      if (reply === 'OK') return SET_REPLY;
      // The queue script reclaims a key of ours too (see QUEUE_SCRIPT).
      if (queue) return queueFollowUp(x, queue, key, token, ttlMs, false);
      if (reclaim) return x.run(RECLAIM_SCRIPT, keys, [token, ttlMs]);
      return x
        .call((client) => client.pttl(key))
        .then(
          (pttl) => [0, pttl],
          () => [0, -1], // held all the same; only the hint is missing
        );
    });
}

/** Queues this process after a refused attempt on the arbiter (see QUEUE_SCRIPT); a refusal by the ACL counts as held. */
function queueFollowUp(
  x: NodeExchange,
  queue: QueueFollowUp,
  key: string,
  token: string,
  ttlMs: number,
  fenced: boolean,
): Promise<unknown> {
  return queueOnNode(x, queue.queue, key, token, ttlMs, queue.score()).then(
    (reply) => followedUp(reply, queue, fenced),
    (err: unknown) => {
      if (!isDenied(err)) throw err;
      queue.denied(err);
      return HELD_NO_HINT;
    },
  );
}

/** Held, without a retry-after hint. */
const HELD_NO_HINT = Object.freeze([0, -1]);

/** A reply saying the key is free again: the caller attempts once more without waiting. */
const FREE_NOW = Object.freeze([0, -2]);

/**
 * Tells the caller how the queue follow-up went; the reply goes on to the round. A fenced lock's
 * key reclaimed by the follow-up carries no counter, so it counts as refused, to be attempted again.
 */
function followedUp(reply: unknown, queue: QueueFollowUp, fenced = false): unknown {
  if (!Array.isArray(reply)) return reply;
  if (Number(reply[0]) === 1 && !fenced) return reply;
  if (Number(reply[0]) === 1 || Number(reply[1]) === -2) {
    queue.free();
    return FREE_NOW;
  }
  queue.queued();
  return reply;
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

/** A grant without fence counters (the common case): one shared reply instead of two arrays per node. */
const GRANTED: ParsedReply<string[]> = Object.freeze({ status: 'ok', value: Object.freeze([]) as unknown as string[] });

/** Parses the acquire reply: the fence counters (strings) as the value on success. */
export function parseAcquireReply(reply: unknown): ParsedReply<string[]> {
  if (!Array.isArray(reply)) return { status: 'error' };
  if (reply.length === 1 && Number(reply[0]) === 1) return GRANTED;
  if (Number(reply[0]) === 1) return { status: 'ok', value: reply.slice(1).map(String) };
  const pttl = Number(reply[1]);
  return pttl > 0 ? { status: 'held', ttlMs: pttl } : { status: 'held' };
}
