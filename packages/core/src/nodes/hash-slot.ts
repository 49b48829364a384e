/**
 * Redis Cluster key slots and the hash-tagged key names of cluster nodes.
 *
 * A Redis Cluster runs a script (or MULTI) only when all its keys are in one slot, and
 * hashes only the part of a key between the first `{` and the next `}` when there is one
 * (the "hash tag" of the Redis Cluster specification). Every key of a resource therefore
 * carries the resource as its tag: the lock key and its release-notice channel (the lock
 * key's name), the fencing counter, a read-write lock's readers and waiting writers, a
 * semaphore's slots and a fair queue's keys (`<prefix>lock:{<resource>}`,
 * `<prefix>semaphore:{<resource>}:<i>`, ...), so any script of a primitive runs in one slot.
 */
import { RedlockArgumentError } from '../errors/errors.js';

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with, as a lookup table. */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

const encoder = new TextEncoder();

/**
 * The cluster slot (0–16383) of `key`, as the server computes it: the hash tag only when
 * the key has a non-empty one.
 *
 * @example
 * ```ts
 * hashSlot('redlock:lock:{order:42}') === hashSlot('redlock:fence:{order:42}'); // true
 * ```
 */
export function hashSlot(key: string): number {
  const bytes = encoder.encode(key);
  const open = bytes.indexOf(0x7b); // '{'
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // '}'
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) & 0x3fff;
  }
  return crc16(bytes) & 0x3fff;
}

/**
 * The resource as a hash tag. A `}` inside the resource would end the tag early and a `{`
 * would be harmless only after the first, so both are escaped, with `%` escaped too so the
 * mapping stays one-to-one (two different resources never share a key): `%` → `%25`,
 * `{` → `%7B`, `}` → `%7D`.
 */
export function hashTag(resource: string): string {
  return `{${resource.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'))}}`;
}

/**
 * Refuses a key prefix that would break the tags: any `{` or `}` in it would become (or
 * break) the tag of every key. One slot for every lock is what a prefix like `{app}:` asks
 * for, but then the lock key and the counter would not share it with a partial tag.
 */
export function checkTaggablePrefix(keyPrefix: string): void {
  if (/[{}]/.test(keyPrefix)) {
    throw new RedlockArgumentError(
      `keyPrefix "${keyPrefix}" contains "{" or "}": on Redis Cluster nodes each key's hash tag is built from its resource, ` +
        'and braces in the prefix would take its place. Use a prefix without braces (e.g. "app:redlock:").',
    );
  }
}

/**
 * The kinds of keys a resource has: its lock key and fencing counter, the readers, waiting
 * writers and waiting readers (queued behind a writer, or in the batch after it) of its read-write lock, its semaphore's slots (`semaphore:<resource>:<i>`),
 * its fair queue, ticket counter and waiters' liveness, and the processes queued for its
 * release on its arbiter (`waiters`, see scripts/wake-queue.ts).
 */
export type KeyKind =
  | 'lock'
  | 'fence'
  | 'rw-readers'
  | 'rw-writers'
  | 'rw-queued'
  | 'rw-batch'
  | 'semaphore'
  | 'fair-queue'
  | 'fair-ticket'
  | 'fair-alive'
  | 'waiters';

/** A resource's key of `kind` on a Redlock with cluster nodes. */
export function taggedKey(keyPrefix: string, kind: KeyKind, resource: string): string {
  return `${keyPrefix}${kind}:${hashTag(resource)}`;
}

/** The keys of one slot: which resources (by index) and their keys, laid out as the scripts take them. */
export interface SlotGroup {
  readonly indices: readonly number[];
  readonly keys: readonly string[];
}

/**
 * Splits a script's keys into one group per slot. `keys` holds `columns` blocks of one key
 * per resource (lock keys, then fencing counters when `columns` is 2); resource `i`'s keys
 * share its tag, so the lock keys alone decide the slot. A cluster node runs one script per
 * group: keys of different slots can never be in one command (CROSSSLOT).
 */
export function slotGroups(keys: readonly string[], columns: number): SlotGroup[] {
  const n = keys.length / columns;
  const bySlot = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const slot = hashSlot(keys[i]!);
    const group = bySlot.get(slot);
    if (group) group.push(i);
    else bySlot.set(slot, [i]);
  }
  return [...bySlot.values()].map((indices) => ({
    indices,
    keys: Array.from({ length: columns }, (_, c) => indices.map((i) => keys[c * n + i]!)).flat(),
  }));
}

/** How a Redlock names a resource's keys. */
export interface KeyNames {
  /** Hash-tagged names (a node is a Redis Cluster). */
  readonly tagged: boolean;
  lock(resource: string): string;
  fence(resource: string): string;
  /** Any key of the resource: with tags, every one shares the resource's slot, so one script may touch them all. */
  key(kind: KeyKind, resource: string): string;
}

/**
 * The key names of a Redlock: hash-tagged when any node is a Redis Cluster (every node of
 * that Redlock then uses them, so all its clients agree), the untagged names otherwise. Plain
 * nodes keep the names earlier versions used: a rolling upgrade's old and new processes
 * must exclude each other, which they do only while they write the same keys.
 * @throws {RedlockArgumentError} a tagged Redlock with braces in its prefix.
 */
export function keyNames(keyPrefix: string, tagged: boolean): KeyNames {
  if (tagged) checkTaggablePrefix(keyPrefix);
  const key = tagged
    ? (kind: KeyKind, r: string) => taggedKey(keyPrefix, kind, r)
    : (kind: KeyKind, r: string) => `${keyPrefix}${kind}:${r}`;
  return { tagged, key, lock: (r) => key('lock', r), fence: (r) => key('fence', r) };
}
