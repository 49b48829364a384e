/**
 * The Lua scripts of read-write locks (scripts/read-write.ts, scripts/read-write-release.ts),
 * implemented in JavaScript for the in-memory node, line by line as in-memory-primitives.ts does
 * for the other primitives: the same reads, writes, notices and replies. The in-memory node is a
 * plain node, so the plain (PUBLISH) form of each notifying script is the one registered.
 */
import type { LuaScript } from '../nodes/lua-script.js';
import { integer, nodeNow, type PrimitiveContext, type PrimitiveScript } from './in-memory-primitives.js';
import { READ_ACQUIRE_SCRIPT, READERS_MARKER, WRITE_ACQUIRE_SCRIPT } from '../scripts/read-write.js';
import {
  READ_ABANDON_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_RELEASE_SCRIPT,
  READ_YIELD_SCRIPT,
  WRITE_ABANDON_SCRIPT,
  WRITE_RELEASE_SCRIPT,
  WRITE_YIELD_SCRIPT,
} from '../scripts/read-write-release.js';

/** ZADD key (now + lease) token, and the key lives at least `lease` (the scripts' `mark`). */
function mark(ctx: PrimitiveContext, key: string, token: string, now: number, lease: number): void {
  ctx.keys.zadd(key, now + lease, token);
  if (ctx.keys.pttl(key) < lease) ctx.keys.pexpire(key, lease);
}

/** The scripts' `promote`: the queued readers join the batch, keeping their lease ends and the longer key TTL. */
function promote(ctx: PrimitiveContext, queued: string, batch: string): void {
  const k = ctx.keys;
  const moving = k.zset(queued)?.entries();
  if (!moving) return;
  const pttl = Math.max(k.pttl(queued), k.pttl(batch));
  for (const { member, score } of moving) {
    const had = k.zset(batch)?.score(member);
    k.zadd(batch, had === undefined ? score : Math.max(had, score), member);
  }
  k.del(queued);
  if (pttl > 0) k.pexpire(batch, pttl);
}

/** A live score (lease end after `now`) of `member` in `key`. */
function live(ctx: PrimitiveContext, key: string, member: string, now: number): boolean {
  const score = ctx.keys.zset(key)?.score(member);
  return score !== undefined && score > now;
}

/** KEYS: lock, readers, writers, queued, batch, [fence]; ARGV: token, ttl, fence flag, waiting lease, waited flag. */
const writeAcquire: PrimitiveScript = (ctx, [lock, readers, writers, , batch, fence], [token, ttl, fencing, leaseArg, waited]) => {
  const k = ctx.keys;
  const holder = k.get(lock!);
  let blocked: number | undefined;
  let now: number | undefined;
  if (holder === token) {
    blocked = undefined;
  } else if (holder !== undefined && holder !== READERS_MARKER) {
    blocked = k.pttl(lock!);
  } else if (holder !== undefined || k.exists(readers!) || k.exists(batch!)) {
    now = nodeNow();
    k.zremrangebyscore(readers!, now);
    const last = k.zset(readers!)?.at(-1);
    if (last) blocked = last.score - now;
    else {
      k.zremrangebyscore(batch!, now);
      if (k.exists(batch!)) blocked = -1;
    }
  }
  if (blocked !== undefined) {
    const lease = Number(leaseArg);
    if (lease > 0) mark(ctx, writers!, token!, now ?? nodeNow(), lease);
    return [0, integer(blocked)];
  }
  k.set(lock!, token!, Number(ttl));
  if (waited === '1') k.zrem(writers!, token!);
  if (fencing === '1') {
    k.incr(fence!);
    return [1, k.get(fence!) ?? null];
  }
  return [1];
};

/** KEYS: lock, readers, writers, queued, batch, [fence]; ARGV: token, ttl, fence flag, waiting lease, waited flag. */
const readAcquire: PrimitiveScript = (ctx, [lock, readers, writers, queued, batch, fence], [token, ttlArg, fencing, leaseArg, waited]) => {
  const k = ctx.keys;
  const holder = k.get(lock!);
  const lease = Number(leaseArg);
  if (holder !== undefined && holder !== READERS_MARKER) {
    if (lease > 0) mark(ctx, queued!, token!, nodeNow(), lease);
    return [0, k.pttl(lock!)];
  }
  const ttl = Number(ttlArg);
  const now = nodeNow();
  if (holder !== undefined || k.exists(writers!) || k.exists(batch!)) {
    if (live(ctx, batch!, token!, now)) {
      k.zrem(batch!, token!);
      if (holder === undefined) {
        k.zremrangebyscore(batch!, now);
        if (k.exists(batch!)) ctx.publish(batch!, '1');
      }
    } else if (!live(ctx, readers!, token!, now)) {
      k.zremrangebyscore(writers!, now);
      if (k.exists(writers!)) {
        if (lease > 0) mark(ctx, queued!, token!, now, lease);
        return [0, -1];
      }
    }
    if (holder !== undefined) k.zremrangebyscore(readers!, now);
  }
  if (waited === '1') k.zrem(queued!, token!);
  k.zadd(readers!, now + ttl, token!);
  if (holder !== undefined) {
    if (k.pttl(lock!) < ttl) k.pexpire(lock!, ttl);
    if (k.pttl(readers!) < ttl) k.pexpire(readers!, ttl);
  } else {
    k.set(lock!, READERS_MARKER, ttl);
    k.pexpire(readers!, ttl);
  }
  if (fencing === '1') return [1, k.get(fence!) ?? '0'];
  return [1];
};

/** The scripts' `leave`: removes the reader's lease; the last one out keeps the marker for the batch, or deletes it and calls `freed`. */
function leave(
  ctx: PrimitiveContext,
  keys: { lock: string; readers: string; batch: string },
  token: string,
  now: number,
  freed: () => void,
): number | undefined {
  const k = ctx.keys;
  const { lock, readers, batch } = keys;
  const score = k.zset(readers)?.score(token);
  if (score === undefined) return undefined;
  k.zrem(readers, token);
  const last = k.zset(readers)?.at(-1);
  const marked = k.get(lock) === READERS_MARKER;
  if (last && last.score > now) {
    const left = last.score - now;
    if (marked) k.pexpire(lock, left);
    k.pexpire(readers, left);
    return score;
  }
  if (last) k.del(readers);
  if (!marked) return score;
  if (k.exists(batch)) {
    k.zremrangebyscore(batch, now);
    const waiting = k.zset(batch)?.at(-1);
    if (waiting) {
      k.pexpire(lock, Math.max(1, waiting.score - now));
      return score;
    }
  }
  k.del(lock);
  freed();
  return score;
}

/** KEYS: lock, writers, queued, batch; ARGV: token. */
const writeRelease: PrimitiveScript = (ctx, [lock, writers, queued, batch], [token]) => {
  const k = ctx.keys;
  if (k.get(lock!) !== token) return 0;
  if (k.exists(queued!) || k.exists(batch!)) {
    promote(ctx, queued!, batch!);
    const now = nodeNow();
    k.zremrangebyscore(batch!, now);
    const last = k.zset(batch!)?.at(-1);
    if (last) {
      k.set(lock!, READERS_MARKER, Math.max(1, last.score - now));
      ctx.publish(batch!, '1');
      return 1;
    }
  }
  k.del(lock!);
  ctx.publish(writers!, '1');
  ctx.publish(lock!, '1');
  return 1;
};

/** KEYS: lock, readers, writers, batch; ARGV: token. */
const readRelease: PrimitiveScript = (ctx, [lock, readers, writers, batch], [token]) => {
  const now = nodeNow();
  const score = leave(ctx, { lock: lock!, readers: readers!, batch: batch! }, token!, now, () => {
    ctx.publish(writers!, '1');
    ctx.publish(lock!, '1');
  });
  return score !== undefined && score > now ? 1 : 0;
};

/** KEYS: lock, readers; ARGV: token, ttl. */
const readExtend: PrimitiveScript = (ctx, [lock, readers], [token, ttlArg]) => {
  const k = ctx.keys;
  const now = nodeNow();
  if (!live(ctx, readers!, token!, now) || k.get(lock!) !== READERS_MARKER) return 0;
  const ttl = Number(ttlArg);
  k.zadd(readers!, now + ttl, token!);
  if (k.pttl(lock!) < ttl) k.pexpire(lock!, ttl);
  if (k.pttl(readers!) < ttl) k.pexpire(readers!, ttl);
  return 1;
};

/** KEYS: lock, readers, queued, batch; ARGV: token, waiting lease. */
const readYield: PrimitiveScript = (ctx, [lock, readers, queued, batch], [token, leaseArg]) => {
  const now = nodeNow();
  const score = leave(ctx, { lock: lock!, readers: readers!, batch: batch! }, token!, now, () => undefined);
  mark(ctx, queued!, token!, now, Number(leaseArg));
  return score === undefined ? 0 : 1;
};

/** KEYS: lock, readers, writers, queued, batch; ARGV: token. */
const readAbandon: PrimitiveScript = (ctx, [lock, readers, writers, queued, batch], [token]) => {
  const k = ctx.keys;
  const wasQueued = k.zrem(queued!, token!);
  if (k.zrem(batch!, token!) === 0) return wasQueued;
  const now = nodeNow();
  k.zremrangebyscore(batch!, now);
  if (k.exists(batch!)) return 1;
  let holder = k.get(lock!);
  if (holder === READERS_MARKER) {
    k.zremrangebyscore(readers!, now);
    if (k.exists(readers!)) return 1;
    k.del(lock!);
    holder = undefined;
  }
  if (holder === undefined) {
    ctx.publish(writers!, '1');
    ctx.publish(lock!, '1');
  }
  return 1;
};

/** KEYS: lock, writers; ARGV: token, waiting lease. */
const writeYield: PrimitiveScript = (ctx, [lock, writers], [token, leaseArg]) => {
  const k = ctx.keys;
  const now = nodeNow();
  let released = 0;
  if (k.get(lock!) === token) {
    k.del(lock!);
    released = 1;
  }
  mark(ctx, writers!, token!, now, Number(leaseArg));
  return released;
};

/** KEYS: writers, batch; ARGV: token. */
const writeAbandon: PrimitiveScript = (ctx, [writers, batch], [token]) => {
  const k = ctx.keys;
  if (k.zrem(writers!, token!) === 0) return 0;
  k.zremrangebyscore(writers!, nodeNow());
  if (!k.exists(writers!)) ctx.publish(batch!, '1');
  return 1;
};

/** The read-write lock's scripts (their plain-node forms), each with its JavaScript implementation. */
export const readWriteScripts: ReadonlyArray<readonly [LuaScript, PrimitiveScript]> = [
  [WRITE_ACQUIRE_SCRIPT, writeAcquire],
  [READ_ACQUIRE_SCRIPT.plain, readAcquire],
  [WRITE_RELEASE_SCRIPT.plain, writeRelease],
  [READ_RELEASE_SCRIPT.plain, readRelease],
  [READ_EXTEND_SCRIPT, readExtend],
  [READ_YIELD_SCRIPT, readYield],
  [READ_ABANDON_SCRIPT.plain, readAbandon],
  [WRITE_YIELD_SCRIPT, writeYield],
  [WRITE_ABANDON_SCRIPT.plain, writeAbandon],
];
