/**
 * `listLocks`: every lock the nodes hold now, found with SCAN (never KEYS: KEYS blocks a node
 * for the whole keyspace) under a page limit, and read in one script per node. What the
 * operators' dashboard shows; `inspect` (operator.ts) is the one-resource view.
 */
import { isClusterClient } from './cluster-client.js';
import { RedlockArgumentError } from './errors.js';
import type { KeyNames } from './hash-slot.js';
import { defineScript, type LockNode } from './lock-node.js';
import { escapeGlob, type CommandClient } from './node-commands.js';
import { ownerHash } from './operator.js';
import { READERS_MARKER } from './scripts/read-write.js';

/** What a listing needs of its Redlock (a `Redlock` is one). */
export interface LockListingSource {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
  readonly keyNames: KeyNames;
  readonly options: { readonly keyPrefix: string; readonly nodeTimeoutMs: number };
}

/** Limits of one listing: each bounds the work a node does for it. */
export interface ListLocksOptions {
  /** SCAN's COUNT hint: keys a node looks at per page. Default 200. */
  readonly count?: number;
  /** Pages per node at most; a keyspace larger than `count × maxPages` is listed in part (`truncated`). Default 10. */
  readonly maxPages?: number;
  /** Entries of a fair queue to return, head first. Default 10. */
  readonly queueLimit?: number;
  /** A node that has not finished its listing by then is reported with an error. Default 4 × nodeTimeoutMs. */
  readonly timeoutMs?: number;
}

/** What kind of hold a resource has. A write lock IS a plain lock key, so it shows as `mutex`. */
export type ListedLockKind = 'mutex' | 'read' | 'semaphore' | 'fair';

/** One resource held on at least one node. */
export interface ListedLock {
  readonly resource: string;
  readonly kind: ListedLockKind;
  /** Short hash of the owner token held on a quorum (see `inspect`); absent for readers, semaphores and split holds. */
  readonly holder?: string;
  /** Nodes whose lock key (or semaphore slot) exists. */
  readonly heldOn: number;
  /** Readers holding a read lock, or permits held of a semaphore (the largest count a node reports). */
  readonly holders: number;
  /** A semaphore's permits: at least this many (its slots are numbered; only held slots exist). */
  readonly permitsAtLeast?: number;
  /** The largest fencing counter the nodes report (decimal): the current holder's token when it fenced. */
  readonly fencingToken?: string;
  /** The longest remaining TTL a node reports, ms. */
  readonly ttlMs: number;
  /** Processes waiting for it: queued wake-ups, waiting writers and readers, fair waiters (largest per node). */
  readonly waiters: number;
  /** A fair lock's queue, head first: waiter ids and tickets (from the node with the longest queue). */
  readonly queue?: ReadonlyArray<{ readonly waiter: string; readonly ticket: number }>;
}

/** How the listing went on one node. */
export interface NodeListing {
  readonly node: string;
  /** Keys of the lock prefix the node's SCAN returned. */
  readonly keys: number;
  /** The page limit stopped the scan before the end of the keyspace. */
  readonly truncated: boolean;
  readonly error?: string;
}

/** What `listLocks` found. */
export interface LockListing {
  readonly locks: readonly ListedLock[];
  readonly nodes: readonly NodeListing[];
  readonly truncated: boolean;
}

/**
 * KEYS: the keys to describe; ARGV: entries of a sorted set to return. Per key:
 * {type, pttl, GET value} for strings, {type, pttl, ZCARD, member, score, ...} for sorted sets.
 * One script instead of a command per key: a page of keys costs one round trip.
 */
const DESCRIBE_SCRIPT = defineScript(
  'describe-keys',
  `local out = {}
local limit = tonumber(ARGV[1]) - 1
for i, key in ipairs(KEYS) do
  local t = redis.call('TYPE', key)['ok']
  local row = {t, redis.call('PTTL', key)}
  if t == 'string' then
    row[3] = redis.call('GET', key)
  elseif t == 'zset' then
    row[3] = redis.call('ZCARD', key)
    local range = redis.call('ZRANGE', key, 0, limit, 'WITHSCORES')
    for j = 1, #range do row[3 + j] = range[j] end
  end
  out[i] = row
end
return out`,
);

type Part = 'lock' | 'semaphore' | 'fence' | 'rw-readers' | 'rw-writers' | 'rw-queued' | 'fair-queue' | 'waiters';
const PARTS: readonly Part[] = ['lock', 'semaphore', 'fence', 'rw-readers', 'rw-writers', 'rw-queued', 'fair-queue', 'waiters'];

/** The resource and part a key belongs to, or undefined for keys the listing ignores. */
function parseKey(key: string, keyPrefix: string, tagged: boolean): { part: Part; resource: string; slot?: number } | undefined {
  if (!key.startsWith(keyPrefix)) return undefined;
  const rest = key.slice(keyPrefix.length);
  const part = PARTS.find((p) => rest.startsWith(`${p}:`));
  if (!part) return undefined;
  let resource = rest.slice(part.length + 1);
  let slot: number | undefined;
  if (part === 'semaphore') {
    const cut = resource.lastIndexOf(':');
    slot = Number(resource.slice(cut + 1));
    if (cut < 1 || !Number.isInteger(slot)) return undefined;
    resource = resource.slice(0, cut);
  }
  if (tagged) resource = untag(resource);
  return slot === undefined ? { part, resource } : { part, resource, slot };
}

/** The resource of a hash tag (the inverse of `hashTag` in hash-slot.ts). */
function untag(tag: string): string {
  return tag.replace(/^\{|\}$/g, '').replace(/%7B|%7D|%25/g, (c) => (c === '%7B' ? '{' : c === '%7D' ? '}' : '%'));
}

/** A node's view of one resource. */
interface NodeView {
  owner?: string;
  readers?: number;
  slots: number;
  topSlot: number;
  pttl: number;
  fence?: string;
  waiters: number;
  queue?: Array<{ waiter: string; ticket: number }>;
}

function view(views: Map<string, NodeView>, resource: string): NodeView {
  let v = views.get(resource);
  if (!v) views.set(resource, (v = { slots: 0, topSlot: -1, pttl: 0, waiters: 0 }));
  return v;
}

async function scanNode(
  node: LockNode,
  keyPrefix: string,
  count: number,
  maxPages: number,
): Promise<{ keys: string[]; truncated: boolean }> {
  const client = node.client as CommandClient;
  if (!client.call) throw new Error('the client has no generic command method (call)');
  const send = client.call.bind(client);
  const pattern = `${escapeGlob(keyPrefix)}*`;
  const keys: string[] = [];
  let cursor = '0';
  let pages = 0;
  do {
    const [next, page] = (await node.call(() => send('SCAN', cursor, 'MATCH', pattern, 'COUNT', count))) as [string, string[]];
    cursor = String(next);
    keys.push(...page);
  } while (cursor !== '0' && ++pages < maxPages);
  return { keys: [...new Set(keys)], truncated: cursor !== '0' };
}

/** Scans one node and reads the keys it found, as one view per resource. */
/** `work`, or a rejection once `ms` have passed (a paused node never answers). */
function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no listing within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

async function listNode(node: LockNode, keyPrefix: string, tagged: boolean, limits: Omit<Required<ListLocksOptions>, 'timeoutMs'>) {
  const { keys, truncated } = await scanNode(node, keyPrefix, limits.count, limits.maxPages);
  const parsed = keys.map((key) => ({ key, parsed: parseKey(key, keyPrefix, tagged) })).filter((k) => k.parsed !== undefined);
  // Fencing counters outlive their locks: read only those of resources held now.
  const held = new Set<string>(parsed.filter((k) => k.parsed!.part === 'lock').map((k) => k.parsed!.resource));
  const wanted = parsed.filter((k) => k.parsed!.part !== 'fence' || held.has(k.parsed!.resource));
  const views = new Map<string, NodeView>();
  if (wanted.length === 0) return { views, keys: keys.length, truncated };
  const rows = (await node.run(
    DESCRIBE_SCRIPT,
    wanted.map((k) => k.key),
    [limits.queueLimit],
  )) as Array<Array<string | number>>;
  wanted.forEach(({ parsed: p }, i) => {
    const [type, pttl, value, ...range] = rows[i] ?? [];
    if (type === 'none' || !p) return;
    const v = view(views, p.resource);
    const ttl = Number(pttl);
    if (p.part === 'lock' || p.part === 'semaphore') v.pttl = Math.max(v.pttl, ttl);
    if (p.part === 'lock' && typeof value === 'string' && value !== READERS_MARKER) v.owner = ownerHash(value);
    else if (p.part === 'lock') v.readers ??= 0;
    else if (p.part === 'semaphore') {
      v.slots++;
      v.topSlot = Math.max(v.topSlot, p.slot ?? 0);
    } else if (p.part === 'fence' && typeof value === 'string') v.fence = value;
    else if (p.part === 'rw-readers') v.readers = Number(value);
    else if (p.part === 'fair-queue') {
      v.waiters += Number(value);
      v.queue = [];
      for (let j = 0; j + 1 < range.length; j += 2) v.queue.push({ waiter: String(range[j]), ticket: Number(range[j + 1]) });
    } else v.waiters += Number(value); // waiters, rw-writers, rw-queued
  });
  return { views, keys: keys.length, truncated };
}

function greaterDecimal(a: string | undefined, b: string): boolean {
  return a === undefined || a.length < b.length || (a.length === b.length && a < b);
}

/** Merges the nodes' views of one resource; undefined when no node holds it (waiters of a free key). */
function merge(resource: string, views: readonly NodeView[], quorum: number): ListedLock | undefined {
  const holding = views.filter((v) => v.owner !== undefined || v.readers !== undefined || v.slots > 0);
  if (holding.length === 0) return undefined;
  const tally = new Map<string, number>();
  for (const v of holding) if (v.owner) tally.set(v.owner, (tally.get(v.owner) ?? 0) + 1);
  const holder = [...tally].find(([, n]) => n >= quorum)?.[0];
  let fence: string | undefined;
  for (const v of views) if (v.fence !== undefined && greaterDecimal(fence, v.fence)) fence = v.fence;
  const queue = views.reduce<NodeView['queue']>(
    (best, v) => (v.queue && v.queue.length > (best?.length ?? -1) ? v.queue : best),
    undefined,
  );
  const semaphore = holding.some((v) => v.slots > 0);
  const readers = holding.some((v) => v.readers !== undefined);
  const kind: ListedLockKind = semaphore ? 'semaphore' : readers ? 'read' : queue ? 'fair' : 'mutex';
  const holders = semaphore ? Math.max(...views.map((v) => v.slots)) : readers ? Math.max(...views.map((v) => v.readers ?? 0)) : 1;
  return {
    resource,
    kind,
    ...(holder && kind !== 'read' ? { holder } : {}),
    heldOn: holding.length,
    holders,
    ...(semaphore ? { permitsAtLeast: Math.max(...views.map((v) => v.topSlot + 1)) } : {}),
    ...(fence !== undefined && !semaphore ? { fencingToken: fence } : {}),
    ttlMs: Math.max(...holding.map((v) => v.pttl)),
    waiters: Math.max(...views.map((v) => v.waiters)),
    ...(queue ? { queue } : {}),
  };
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new RedlockArgumentError(
      `listLocks({ ${name} }) must be a positive integer, got ${String(value)}: pass e.g. { ${name}: ${fallback} }.`,
    );
  }
  return value;
}

/**
 * Lists the locks held on the nodes: per resource its kind, holder (owner hash), fencing
 * token, TTL left and waiters. Each node is scanned with SCAN MATCH `<keyPrefix>*`, at most
 * `maxPages` pages of `count`: on a large keyspace the listing is partial and says so.
 * Nodes of a Redis Cluster are not listed (their keys live on many shards): they report an error.
 *
 * @example
 * ```ts
 * const { locks } = await listLocks(redlock, { count: 500, maxPages: 4 });
 * for (const l of locks) console.log(l.resource, l.kind, l.fencingToken ?? '-', `${l.ttlMs} ms`);
 * ```
 */
export async function listLocks(source: LockListingSource, options: ListLocksOptions = {}): Promise<LockListing> {
  const limits = {
    count: positive('count', options.count, 200),
    maxPages: positive('maxPages', options.maxPages, 10),
    queueLimit: positive('queueLimit', options.queueLimit, 10),
  };
  const timeoutMs = positive('timeoutMs', options.timeoutMs, source.options.nodeTimeoutMs * 4);
  const { keyPrefix } = source.options;
  const results = await Promise.all(
    source.nodes
      .map((node) =>
        isClusterClient(node.client)
          ? Promise.reject(new Error('a Redis Cluster node: its locks are not listed'))
          : withDeadline(listNode(node, keyPrefix, source.keyNames.tagged, limits), timeoutMs),
      )
      .map((p) =>
        p.then(
          (r) => ({ ok: true as const, ...r }),
          (err: unknown) => ({ ok: false as const, error: String((err as Error)?.message ?? err) }),
        ),
      ),
  );
  const byResource = new Map<string, NodeView[]>();
  const nodes = results.map((r, i): NodeListing => {
    const node = source.nodes[i]!.label;
    if (!r.ok) return { node, keys: 0, truncated: false, error: r.error };
    for (const [resource, v] of r.views) byResource.set(resource, [...(byResource.get(resource) ?? []), v]);
    return { node, keys: r.keys, truncated: r.truncated };
  });
  const locks = [...byResource]
    .map(([resource, views]) => merge(resource, views, source.quorum))
    .filter((l): l is ListedLock => l !== undefined)
    .sort((a, b) => a.resource.localeCompare(b.resource));
  return { locks, nodes, truncated: nodes.some((n) => n.truncated) };
}
