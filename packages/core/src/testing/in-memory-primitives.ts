/**
 * The Lua scripts of semaphores and fair locks (read-write locks: in-memory-read-write.ts), implemented in JavaScript for
 * the in-memory node (registered beside the mutex scripts in in-memory-commands.ts). Each one
 * follows its script line by line: the same reads, writes and replies, with Lua's conversions
 * (a Lua number returns as an integer reply, truncated; `nil` as null). The node's time (`TIME`
 * in the scripts) is the clock the in-memory node expires keys by, so scores and PX expiries
 * compare as they do on a Redis server.
 */
import type { LuaScript } from '../nodes/lua-script.js';
import type { SortedSet } from './in-memory-sorted-set.js';
import { FAIR_ACQUIRE_SCRIPT, FAIR_ALIVE_SCRIPT } from '../scripts/fair-acquire.js';
import { FAIR_LEAVE_SCRIPT, FAIR_RELEASE_SCRIPT } from '../scripts/fair-release.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from '../scripts/semaphore.js';

/** What these scripts use of the in-memory keyspace (MemoryKeyspace; an interface keeps this file free of a cycle). */
export interface PrimitiveKeyspace {
  get(key: string): string | undefined;
  set(key: string, value: string, ttlMs?: number): void;
  exists(key: string): boolean;
  pttl(key: string): number;
  pexpire(key: string, ttlMs: number): number;
  del(key: string): number;
  incr(key: string): string;
  zset(key: string): SortedSet | undefined;
  zadd(key: string, score: number, member: string, onlyNew?: boolean): number;
  zrem(key: string, member: string): number;
  zremrangebyscore(key: string, max: number): number;
}

/** What a script may do: the keyspace, and PUBLISH. */
export interface PrimitiveContext {
  readonly keys: PrimitiveKeyspace;
  publish(channel: string, message: string): number;
}

/** A script's JavaScript implementation. */
export type PrimitiveScript = (ctx: PrimitiveContext, keys: readonly string[], args: readonly string[]) => unknown;

/** The scripts' `now`: whole ms of the clock key expiries are measured by (Redis: TIME in ms). */
export function nodeNow(): number {
  return Math.floor(performance.now());
}

/** A Lua number returned from a script: Redis truncates it to an integer reply. */
export function integer(n: number): number {
  return Math.trunc(n);
}

/** ZCARD. */
function zcard(ctx: PrimitiveContext, key: string): number {
  return ctx.keys.zset(key)?.size ?? 0;
}

/** `string.match(head, '^[^:]*')`: a waiter id's process id. */
function processOf(waiter: string): string {
  const colon = waiter.indexOf(':');
  return colon < 0 ? waiter : waiter.slice(0, colon);
}

/** KEYS: the N slot keys; ARGV: token, ttl, first slot (0-based), how many slots to try (default all). */
const semaphoreAcquire: PrimitiveScript = (ctx, slots, [token, ttl, firstArg, countArg]) => {
  const n = slots.length;
  const first = Number(firstArg);
  // `tonumber(ARGV[4]) or n`: absent (or not a number) means every slot.
  const count = countArg === undefined || Number.isNaN(Number(countArg)) ? n : Number(countArg);
  // Lua's % is floored: never negative.
  const at = (j: number): number => (((first + j) % n) + n) % n;
  let free: number | undefined;
  for (let j = 0; j < count; j++) {
    const i = at(j);
    const holder = ctx.keys.get(slots[i]!);
    if (holder === token) {
      free = i;
      break;
    }
    if (holder === undefined && free === undefined) free = i;
  }
  if (free !== undefined) {
    ctx.keys.set(slots[free]!, token!, Number(ttl));
    return [1, free];
  }
  let soonest = -1;
  for (let j = 0; j < count; j++) {
    const pttl = ctx.keys.pttl(slots[at(j)]!);
    if (pttl > 0 && (soonest < 0 || pttl < soonest)) soonest = pttl;
  }
  return [0, soonest];
};

/** KEYS: lock, queue ZSET, ticket counter, liveness ZSET, [fence]; ARGV: token, ttl, waiter id, ticket, mode. */
const fairAcquire: PrimitiveScript = (ctx, [lock, queue, counter, alive, fence], [token, ttl, me, ticketArg, mode]) => {
  const k = ctx.keys;
  let ticket = Number(ticketArg);
  // SET NX PX, or our own key again (its TTL renewed); with fencing, the counter after INCR.
  const take = (): Array<number | string | null> | undefined => {
    if (k.get(lock!) === undefined) k.set(lock!, token!, Number(ttl));
    else if (k.get(lock!) !== token) return undefined;
    else k.pexpire(lock!, Number(ttl));
    if (fence === undefined) return [1];
    k.incr(fence);
    return [1, k.get(fence) ?? null];
  };
  const head = (): string | undefined => k.zset(queue!)?.at(0)?.member;
  if (mode === 'first') {
    const queued = zcard(ctx, queue!);
    if (queued === 0) {
      const granted = take();
      if (granted) return granted;
    }
    ticket = Number(k.incr(counter!));
    k.zadd(queue!, ticket, me!);
    const pttl = queued === 0 ? k.pttl(lock!) : 0;
    return [0, pttl, ticket, queued];
  }
  if (mode === 'take') {
    const granted = take();
    if (granted) {
      k.zrem(queue!, me!);
      return granted;
    }
    k.zadd(queue!, ticket, me!, true);
    return [0, 0, integer(ticket), 0];
  }
  k.zadd(queue!, ticket, me!);
  if (Number(k.get(counter!) ?? '0') < ticket) k.set(counter!, String(ticket));
  const now = nodeNow();
  let first = head();
  while (first !== undefined && first !== me) {
    const lease = k.zset(alive!)?.score(processOf(first));
    if (lease !== undefined && lease > now) break;
    k.zrem(queue!, first);
    first = head();
  }
  if (first === me) {
    const granted = take();
    if (granted) {
      k.zrem(queue!, me!);
      return granted;
    }
    return [0, k.pttl(lock!), integer(ticket), 0];
  }
  return [0, 0, integer(ticket), k.zset(queue!)?.rank(me!) ?? null, first ?? null];
};

/** KEYS: lock, queue ZSET; ARGV: token, notice prefix. Tells the queue's head (on its process' channel). */
const fairRelease: PrimitiveScript = (ctx, [lock, queue], [token, noticePrefix]) => {
  const holder = ctx.keys.get(lock!);
  if (holder !== undefined && holder !== token) return 0;
  let released = 0;
  if (holder !== undefined) {
    ctx.keys.del(lock!);
    released = 1;
  }
  const head = ctx.keys.zset(queue!)?.at(0)?.member;
  if (head !== undefined) ctx.publish(noticePrefix! + processOf(head), head);
  return released;
};

/** KEYS: lock, queue ZSET; ARGV: waiter id, notice prefix. A head that leaves a free key tells the next. */
const fairLeave: PrimitiveScript = (ctx, [lock, queue], [waiter, noticePrefix]) => {
  let head = ctx.keys.zset(queue!)?.at(0)?.member;
  if (ctx.keys.zrem(queue!, waiter!) === 0) return 0;
  if (head === waiter && !ctx.keys.exists(lock!)) {
    head = ctx.keys.zset(queue!)?.at(0)?.member;
    if (head !== undefined) ctx.publish(noticePrefix! + processOf(head), head);
  }
  return 1;
};

/** The primitives' scripts, each with its JavaScript implementation. */
export const primitiveScripts: ReadonlyArray<readonly [LuaScript, PrimitiveScript]> = [
  [SEMAPHORE_ACQUIRE_SCRIPT, semaphoreAcquire],
  [FAIR_ACQUIRE_SCRIPT, fairAcquire],
  [
    FAIR_ALIVE_SCRIPT,
    (ctx, [key], [processId, ttlArg]) => {
      const now = nodeNow();
      const ttl = Number(ttlArg);
      ctx.keys.zremrangebyscore(key!, now);
      ctx.keys.zadd(key!, now + ttl, processId!);
      if (ctx.keys.pttl(key!) < ttl) ctx.keys.pexpire(key!, ttl);
      return 1;
    },
  ],
  [FAIR_RELEASE_SCRIPT, fairRelease],
  [FAIR_LEAVE_SCRIPT, fairLeave],
];
