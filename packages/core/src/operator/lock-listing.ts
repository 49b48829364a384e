/**
 * `listLocks`: every lock the nodes hold now, found with SCAN (never KEYS: KEYS blocks a node
 * for the whole keyspace) under a page limit, and read in one script per node. What the
 * operators' dashboard shows; `inspect` (operator.ts) is the one-resource view.
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import { RedlockArgumentError } from '../errors/errors.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { LockNode } from '../nodes/lock-node.js';
import { listNode, withDeadline, type NodeView } from './node-listing.js';

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
          (err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) }),
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
