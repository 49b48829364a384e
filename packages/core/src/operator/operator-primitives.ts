/**
 * What `inspect` reads beyond the lock key: a read-write lock's readers and waiting writers,
 * a semaphore's permits, a fair queue's waiters in order, and the processes queued for an
 * addressed wake-up. Key layouts: scripts/read-write.ts, semaphore.ts, scripts/fair-acquire.ts,
 * scripts/wake-queue.ts. Owners are shown as hashes (see `ownerHash`), never as tokens.
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import { type LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { escapeGlob } from '../nodes/node-commands.js';

/** One holder seen on one node: its owner hash and what is left of its lease. */
export interface NodeHolder {
  /** First 12 hex digits of SHA-256 of the owner token. */
  readonly owner: string;
  readonly ttlMs: number;
}

/** One node's view of a resource's primitives (fields absent when the node had none of it). */
export interface NodePrimitives {
  /** Read-write lock: the readers holding it on this node. */
  readonly readers?: readonly NodeHolder[];
  /** Read-write lock: writers waiting on this node (they keep new readers out). */
  readonly writersWaiting?: number;
  /** Read-write lock: readers refused while a writer held or waited, queued for the next read phase. */
  readonly readersQueued?: number;
  /** Semaphore: the permits (slots) held on this node. */
  readonly permits?: ReadonlyArray<NodeHolder & { readonly slot: number }>;
  /** Fair queue: its waiters (`<process id>:<n>`) in the order they get the lock on this node. */
  readonly fairQueue?: readonly string[];
  /** Processes queued on this node for the lock's addressed wake-up (`<prefix>waiters:<resource>`). */
  readonly queued?: number;
}

/** The keys a node is asked about, in the order the script takes them. */
export interface PrimitiveKeys {
  readonly readers: string;
  readonly writers: string;
  readonly queuedReaders: string;
  readonly fairQueue: string;
  /** Absent on Redis Cluster nodes (no addressed wake-ups there). */
  readonly waiters: string | undefined;
  /** The semaphore's slot keys, when the number of permits is known; else they are looked up by SCAN. */
  readonly slots: readonly string[] | undefined;
  /** `<prefix>semaphore:<resource>:` (hash-tagged like the others), the slots' common start. */
  readonly slotPrefix: string;
}

/** The keys of `resource`'s primitives; `permits` when the semaphore's size is known. */
export function primitiveKeys(names: KeyNames, resource: string, permits: number | undefined): PrimitiveKeys {
  const slotPrefix = `${names.key('semaphore', resource)}:`;
  return {
    readers: names.key('rw-readers', resource),
    writers: names.key('rw-writers', resource),
    queuedReaders: names.key('rw-queued', resource),
    fairQueue: names.key('fair-queue', resource),
    waiters: names.tagged ? undefined : names.key('waiters', resource),
    slots: permits === undefined ? undefined : Array.from({ length: permits }, (_, i) => `${slotPrefix}${i}`),
    slotPrefix,
  };
}

/**
 * KEYS: readers, waiting writers, queued readers, fair queue, waiters (or the fair queue again:
 * nothing), then slot keys. Returns {now ms, {reader, lease end}…, writers, queued readers,
 * {fair waiters in ticket order}, queued processes, {slot owner or false, pttl}…}.
 * Read-only: ZRANGE, ZCARD, GET, PTTL, TIME.
 */
export const INSPECT_PRIMITIVES_SCRIPT = defineScript(
  'inspect-primitives',
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local slots = {}
for i = 6, #KEYS do
  slots[#slots + 1] = {redis.call('GET', KEYS[i]), redis.call('PTTL', KEYS[i])}
end
local queued = 0
if KEYS[5] ~= KEYS[4] then queued = redis.call('ZCARD', KEYS[5]) end
return {tostring(now), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]), redis.call('ZRANGE', KEYS[4], 0, -1), queued, slots}`,
);

type Reply = [string, string[], number, number, string[], number, Array<[string | false | null, number]>];

/** Slot keys of `prefix` present on `node` (SCAN: walks the keyspace; give the permits to avoid it). */
async function scanSlots(node: LockNode, prefix: string): Promise<string[]> {
  // A Redis Cluster's keyspace is split over its masters: there the size must be given.
  if (isClusterClient(node.client)) return [];
  const client = node.client as { call?: (...args: Array<string | number>) => Promise<unknown> };
  if (!client.call) return [];
  const found: string[] = [];
  let cursor = '0';
  do {
    const reply = (await node.call(() => client.call!('SCAN', cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000))) as [
      string,
      string[],
    ];
    cursor = String(reply[0]);
    found.push(...reply[1].filter((k) => /^\d+$/.test(k.slice(prefix.length))));
  } while (cursor !== '0');
  return found.sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
}

/**
 * Reads `keys` on `node`; undefined when the node refused (an ACL without ZRANGE or TIME: the
 * lock key's inspection still stands). `hash` turns owner tokens into owner hashes.
 */
export async function inspectPrimitivesOn(
  node: LockNode,
  keys: PrimitiveKeys,
  hash: (token: string) => string,
): Promise<NodePrimitives | undefined> {
  try {
    const slots = keys.slots ?? (await scanSlots(node, keys.slotPrefix));
    const reply = (await node.run(
      INSPECT_PRIMITIVES_SCRIPT,
      [keys.readers, keys.writers, keys.queuedReaders, keys.fairQueue, keys.waiters ?? keys.fairQueue, ...slots],
      [],
    )) as Reply;
    const [nowText, readerPairs, writers, queuedReaders, fair, queued, slotValues] = reply;
    const now = Number(nowText);
    const readers: NodeHolder[] = [];
    for (let i = 0; i + 1 < readerPairs.length; i += 2) {
      const left = Number(readerPairs[i + 1]) - now;
      if (left > 0) readers.push({ owner: hash(readerPairs[i]!), ttlMs: left });
    }
    const permits = slotValues.flatMap(([owner, pttl], i) =>
      typeof owner === 'string' ? [{ slot: Number(slots[i]!.slice(keys.slotPrefix.length)), owner: hash(owner), ttlMs: Number(pttl) }] : [],
    );
    return {
      ...(readers.length > 0 ? { readers } : {}),
      ...(Number(writers) > 0 ? { writersWaiting: Number(writers) } : {}),
      ...(Number(queuedReaders) > 0 ? { readersQueued: Number(queuedReaders) } : {}),
      ...(permits.length > 0 ? { permits } : {}),
      ...(fair.length > 0 ? { fairQueue: fair } : {}),
      ...(Number(queued) > 0 ? { queued: Number(queued) } : {}),
    };
  } catch {
    return undefined;
  }
}

/** Holders present on at least `quorum` nodes: they hold it. */
export interface QuorumHolder {
  readonly owner: string;
  /** On how many nodes. */
  readonly nodes: number;
  /** The smallest lease left among those nodes, ms. */
  readonly ttlMs: number;
}

/** Tallies holders across nodes and keeps those on a quorum, ordered by `order` then owner. */
export function holdersOnQuorum<H extends NodeHolder>(
  perNode: ReadonlyArray<readonly H[] | undefined>,
  quorum: number,
  keyOf: (h: H) => string,
): Array<{ readonly holder: H; readonly nodes: number; readonly ttlMs: number }> {
  const tally = new Map<string, { holder: H; nodes: number; ttlMs: number }>();
  for (const holders of perNode) {
    for (const h of holders ?? []) {
      const k = keyOf(h);
      const seen = tally.get(k);
      if (seen) {
        seen.nodes++;
        seen.ttlMs = Math.min(seen.ttlMs, h.ttlMs);
      } else tally.set(k, { holder: h, nodes: 1, ttlMs: h.ttlMs });
    }
  }
  return [...tally.values()].filter((t) => t.nodes >= quorum);
}

/**
 * The fair queue as a quorum sees it: waiters queued on at least `quorum` nodes, in the order of
 * their mean position there (each node orders by its own tickets; they agree but for a waiter
 * that is still joining).
 */
export function fairQueueOnQuorum(perNode: ReadonlyArray<readonly string[] | undefined>, quorum: number): string[] {
  const places = new Map<string, number[]>();
  for (const queue of perNode) queue?.forEach((id, i) => places.set(id, [...(places.get(id) ?? []), i]));
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  return [...places]
    .filter(([, at]) => at.length >= quorum)
    .sort(([a, x], [b, y]) => mean(x) - mean(y) || (a < b ? -1 : 1))
    .map(([id]) => id);
}
