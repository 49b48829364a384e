/**
 * The keyspace of an in-memory node: strings with a TTL (expired lazily, on access, as Redis
 * does), hashes and sorted sets, and the error replies their commands give.
 */
import { SortedSet } from './in-memory-sorted-set.js';

/** A Redis error reply: the message starts with its code (`ERR`, `NOSCRIPT`, `WRONGTYPE`). */
export class InMemoryReplyError extends Error {
  override readonly name = 'ReplyError';
}

interface Entry {
  value: string;
  /** Monotonic ms; Infinity without a TTL. */
  expiresAt: number;
}

/** A sorted set key (readers, waiting writers, fair queues): it expires as a string key does. */
interface ZsetEntry {
  readonly set: SortedSet;
  expiresAt: number;
}

/** `map`'s entry for `key` unless it expired, which is then dropped (lazily, on access, as Redis does). */
function live<T extends { readonly expiresAt: number }>(map: Map<string, T>, key: string): T | undefined {
  const found = map.get(key);
  if (found && found.expiresAt <= performance.now()) {
    map.delete(key);
    return undefined;
  }
  return found;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

/** The keyspace of one in-memory node. */
export class MemoryKeyspace {
  private readonly entries = new Map<string, Entry>();
  /** Hashes (the fenced store's `{ value, fence }`), without TTL: nothing the engine sends expires them. */
  private readonly hashes = new Map<string, Map<string, string>>();
  private readonly zsets = new Map<string, ZsetEntry>();

  hget(key: string, field: string): string | undefined {
    return this.hashes.get(key)?.get(field);
  }

  hset(key: string, fields: Readonly<Record<string, string>>): void {
    if (this.entries.has(key)) throw new InMemoryReplyError(WRONGTYPE);
    let hash = this.hashes.get(key);
    if (!hash) this.hashes.set(key, (hash = new Map<string, string>()));
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
  }

  private entry(key: string): Entry | undefined {
    return live(this.entries, key);
  }

  private zentry(key: string): ZsetEntry | undefined {
    return live(this.zsets, key);
  }

  get(key: string): string | undefined {
    return this.entry(key)?.value;
  }

  /** EXISTS of one key, of any type. */
  exists(key: string): boolean {
    return this.entry(key) !== undefined || this.zentry(key) !== undefined || this.hashes.has(key);
  }

  /** The sorted set at `key` (undefined when absent, as Redis has no empty one); WRONGTYPE on a string. */
  zset(key: string): SortedSet | undefined {
    if (this.entry(key)) throw new InMemoryReplyError(WRONGTYPE);
    return this.zentry(key)?.set;
  }

  /** ZADD key [NX] score member, keeping the key's TTL; 1 when added. */
  zadd(key: string, score: number, member: string, onlyNew = false): number {
    let z = this.zset(key);
    if (!z) this.zsets.set(key, { set: (z = new SortedSet()), expiresAt: Infinity });
    return z.add(member, score, onlyNew);
  }

  /** ZREM key member; the key goes with its last member, as in Redis. */
  zrem(key: string, member: string): number {
    const z = this.zset(key);
    const removed = z?.remove(member) ?? 0;
    if (z?.size === 0) this.zsets.delete(key);
    return removed;
  }

  /** ZREMRANGEBYSCORE key -inf max; the key goes with its last member. */
  zremrangebyscore(key: string, max: number): number {
    const z = this.zset(key);
    const removed = z?.removeUpTo(max) ?? 0;
    if (z?.size === 0) this.zsets.delete(key);
    return removed;
  }

  /** SET, with `PX ttlMs` when given (a SET without it removes the TTL, as in Redis). */
  set(key: string, value: string, ttlMs?: number): void {
    this.zsets.delete(key); // SET replaces a key of any type
    this.entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : performance.now() + ttlMs });
  }

  /** PTTL: -2 when absent, -1 without a TTL. */
  pttl(key: string): number {
    const e = this.entry(key) ?? this.zentry(key);
    if (!e) return -2;
    return e.expiresAt === Infinity ? -1 : Math.max(0, Math.round(e.expiresAt - performance.now()));
  }

  pexpire(key: string, ttlMs: number): number {
    const e = this.entry(key) ?? this.zentry(key);
    if (!e) return 0;
    e.expiresAt = performance.now() + ttlMs;
    return 1;
  }

  del(key: string): number {
    if (this.hashes.delete(key)) return 1;
    if (this.zentry(key) && this.zsets.delete(key)) return 1;
    return this.entry(key) && this.entries.delete(key) ? 1 : 0;
  }

  /** INCR, keeping the key's TTL; the new value as Redis' GET would read it. */
  incr(key: string): string {
    const e = this.entry(key);
    const current = e ? e.value : '0';
    if (!/^-?\d+$/.test(current)) throw new InMemoryReplyError('ERR value is not an integer or out of range');
    const next = (BigInt(current) + 1n).toString();
    if (e) e.value = next;
    else this.set(key, next);
    return next;
  }

  /** Live keys matching a glob pattern (`*`, `?`, `[...]`, `\` escapes). */
  keys(pattern = '*'): string[] {
    const re = globToRegExp(pattern);
    const live = [...this.entries.keys()].filter((key) => this.entry(key) !== undefined);
    return [...live, ...[...this.zsets.keys()].filter((key) => this.zentry(key) !== undefined)].filter((key) => re.test(key));
  }

  clear(): void {
    this.entries.clear();
    this.hashes.clear();
    this.zsets.clear();
  }
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '\\' && i + 1 < glob.length) re += escapeRe(glob[++i]!);
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        const body = glob.slice(i + 1, end);
        re += `[${body.startsWith('^') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 's');
}

function escapeRe(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
