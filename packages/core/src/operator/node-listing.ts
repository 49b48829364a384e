/**
 * One node's part of `listLocks` (lock-listing.ts): a SCAN under a page limit, then one script
 * that reads the keys found, as one view per resource.
 */
import type { LockNode } from '../nodes/lock-node.js';
import { escapeGlob, type CommandClient } from '../nodes/node-commands.js';
import { ownerHash } from './operator.js';
import { DESCRIBE_SCRIPT } from '../scripts/describe-keys.js';
import { READERS_MARKER } from '../scripts/read-write.js';

type Part = 'lock' | 'semaphore' | 'fence' | 'rw-readers' | 'rw-writers' | 'rw-queued' | 'fair-queue' | 'waiters';
/** How DESCRIBE_SCRIPT reads each part; the keys of the listing are these and no others. */
const HOW: Readonly<Record<Part, 'g' | 'f' | 'z'>> = {
  lock: 'g',
  semaphore: 'g',
  fence: 'f',
  'rw-readers': 'z',
  'rw-writers': 'z',
  'rw-queued': 'z',
  'fair-queue': 'z',
  waiters: 'z',
};
const PARTS = Object.keys(HOW) as Part[];

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
export interface NodeView {
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

/** `work`, or a rejection once `ms` have passed (a paused node never answers). */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no listing within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** Bounds of one node's listing. */
export interface NodeListLimits {
  readonly count: number;
  readonly maxPages: number;
  readonly queueLimit: number;
}

/** Scans one node and reads the keys it found, as one view per resource. */
export async function listNode(node: LockNode, keyPrefix: string, tagged: boolean, limits: NodeListLimits) {
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
    [limits.queueLimit, ...wanted.map((k) => HOW[k.parsed!.part])],
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
