/**
 * What an in-memory node answers, over its keyspace (in-memory-keyspace.ts): the plain commands
 * the engine sends, and each of the engine's Lua scripts
 * implemented in JavaScript, looked up by the script's SHA1. A script the engine does not send
 * (a user's own) is refused as unknown, so a test never passes on a command Redis would run
 * differently.
 */
import { createHash } from 'node:crypto';
import type { LuaScript } from '../nodes/lua-script.js';
import { FENCED_ACCESS_SCRIPT, READ_SCRIPT } from '../fencing/fenced-store.js';
import { FORCE_RELEASE_SCRIPT, INSPECT_SCRIPT } from '../operator/operator.js';
import { ACQUIRE_SCRIPT, RECLAIM_SCRIPT } from '../scripts/acquire.js';
import { EXTEND_SCRIPT } from '../scripts/extend.js';
import { FENCE_HELD_SCRIPT } from '../scripts/fence-held.js';
import { FENCE_RAISE_SCRIPT } from '../scripts/fence-raise.js';
import { RELEASE_QUIET_SCRIPT, RELEASE_SCRIPT } from '../scripts/release.js';
import { primitiveScripts } from './in-memory-primitives.js';
import { readWriteScripts } from './in-memory-read-write.js';
import { InMemoryReplyError, type MemoryKeyspace } from './in-memory-keyspace.js';
import { wakeQueueScripts } from './in-memory-wake-queue.js';
import { listingScripts } from './in-memory-listing.js';

/** What a script or command may do besides the keyspace: publish a release notice. */
export interface CommandContext {
  readonly keys: MemoryKeyspace;
  publish(channel: string, message: string): number;
}

type ScriptImpl = (ctx: CommandContext, keys: readonly string[], args: readonly string[]) => unknown;

/** Raises a decimal counter to at least `v`, compared as decimal strings (the scripts' rule). */
function raise(ctx: CommandContext, key: string, v: string): void {
  const cur = ctx.keys.get(key);
  if (cur === undefined || cur.length < v.length || (cur.length === v.length && cur < v)) ctx.keys.set(key, v);
}

const implementations: ReadonlyArray<readonly [LuaScript, ScriptImpl]> = [
  [
    ACQUIRE_SCRIPT,
    (ctx, keys, [token, ttl, fence]) => {
      const fencing = fence === '1';
      const n = fencing ? keys.length / 2 : keys.length;
      for (let i = 0; i < n; i++) {
        const holder = ctx.keys.get(keys[i]!);
        if (holder !== undefined && holder !== token) return [0, ctx.keys.pttl(keys[i]!)];
      }
      const reply: Array<number | string> = [1];
      for (let i = 0; i < n; i++) {
        ctx.keys.set(keys[i]!, token!, Number(ttl));
        if (fencing) reply.push(ctx.keys.incr(keys[n + i]!));
      }
      return reply;
    },
  ],
  [
    RECLAIM_SCRIPT,
    (ctx, [key], [token, ttl]) => {
      if (ctx.keys.get(key!) !== token) return [0, ctx.keys.pttl(key!)];
      ctx.keys.pexpire(key!, Number(ttl));
      return [1];
    },
  ],
  [
    EXTEND_SCRIPT,
    (ctx, keys, [token, ttl]) => {
      if (keys.some((key) => ctx.keys.get(key) !== token)) return 0;
      for (const key of keys) ctx.keys.pexpire(key, Number(ttl));
      return 1;
    },
  ],
  [
    FENCE_HELD_SCRIPT,
    (ctx, keys, [token]) => {
      const n = keys.length / 2;
      for (let i = 0; i < n; i++) if (ctx.keys.get(keys[i]!) !== token) return [0];
      const reply: Array<number | string> = [1];
      for (let i = 0; i < n; i++) reply.push(ctx.keys.incr(keys[n + i]!));
      return reply;
    },
  ],
  [
    FENCE_RAISE_SCRIPT,
    (ctx, keys, args) => {
      keys.forEach((key, i) => raise(ctx, key, args[i] ?? ''));
      return 1;
    },
  ],
  [
    RELEASE_SCRIPT,
    (ctx, keys, [token]) => {
      let released = 0;
      for (const key of keys) {
        if (ctx.keys.get(key) === token) {
          ctx.keys.del(key);
          ctx.publish(key, '1');
          released++;
        }
      }
      return released;
    },
  ],
  [
    RELEASE_QUIET_SCRIPT,
    (ctx, keys, [token]) => {
      let released = 0;
      for (const key of keys) {
        if (ctx.keys.get(key) === token) {
          ctx.keys.del(key);
          released++;
        }
      }
      return released;
    },
  ],
  [
    INSPECT_SCRIPT,
    (ctx, [lockKey, fenceKey]) => [ctx.keys.get(lockKey!) ?? null, ctx.keys.pttl(lockKey!), ctx.keys.get(fenceKey!) ?? null],
  ],
  [
    FORCE_RELEASE_SCRIPT,
    (ctx, [lockKey, fenceKey], [counter]) => {
      const deleted = ctx.keys.del(lockKey!);
      if (deleted > 0) ctx.publish(lockKey!, '1');
      raise(ctx, fenceKey!, counter!);
      return deleted;
    },
  ],
];

/** Whether decimal token `a` is below `b` (length, then lexically: the scripts' rule, past 2^53). */
function below(a: string, b: string): boolean {
  return a.length < b.length || (a.length === b.length && a < b);
}

const fencedStoreScripts: ReadonlyArray<readonly [LuaScript, ScriptImpl]> = [
  [
    FENCED_ACCESS_SCRIPT,
    (ctx, [key], [token, mode, value]) => {
      const seen = ctx.keys.hget(key!, 'fence');
      if (seen !== undefined && below(token!, seen)) return [0, seen];
      if (mode === 'w') {
        ctx.keys.hset(key!, { fence: token!, value: value! });
        return [1, value];
      }
      if (seen !== token) ctx.keys.hset(key!, { fence: token! });
      return [1, ctx.keys.hget(key!, 'value') ?? null];
    },
  ],
  [READ_SCRIPT, (ctx, [key]) => [ctx.keys.hget(key!, 'value') ?? null, ctx.keys.hget(key!, 'fence') ?? null]],
];

/** The engine's scripts, by SHA1. */
const SCRIPTS: ReadonlyMap<string, ScriptImpl> = new Map(
  [...implementations, ...fencedStoreScripts, ...primitiveScripts, ...readWriteScripts, ...wakeQueueScripts, ...listingScripts].map(
    ([script, impl]) => [script.sha, impl],
  ),
);

/** The SHA1 Redis names a script by. */
export function scriptSha(source: string): string {
  return createHash('sha1').update(source).digest('hex');
}

/** Runs the script `sha` (already known to be in the node's script cache). */
export function runScript(ctx: CommandContext, sha: string, keys: readonly string[], args: readonly string[]): unknown {
  const impl = SCRIPTS.get(sha);
  if (!impl) throw new InMemoryReplyError('ERR the in-memory node runs only the scripts of @redlock-nest/core');
  return impl(ctx, keys, args);
}

/** Whether `sha` is one of the engine's scripts. */
export function isKnownScript(sha: string): boolean {
  return SCRIPTS.has(sha);
}

/** Splits `EVAL`/`EVALSHA` arguments after the script: keys, then args. */
export function scriptArguments(numKeys: number, rest: ReadonlyArray<string | number>): { keys: string[]; args: string[] } {
  if (!Number.isInteger(numKeys) || numKeys < 0 || numKeys > rest.length) {
    throw new InMemoryReplyError("ERR Number of keys can't be greater than number of args");
  }
  const all = rest.map(String);
  return { keys: all.slice(0, numKeys), args: all.slice(numKeys) };
}

/** The plain commands the engine and its operator tools send through `call()`. */
export function runCommand(ctx: CommandContext, name: string, args: readonly string[], numsub: (channel: string) => number): unknown {
  const k = ctx.keys;
  switch (name.toUpperCase()) {
    case 'GET':
      return k.get(args[0]!) ?? null;
    case 'SET': {
      const [key, value, ...flags] = args;
      const upper = flags.map((f) => f.toUpperCase());
      const px = upper.indexOf('PX');
      if (upper.includes('NX') && k.get(key!) !== undefined) return null;
      k.set(key!, value!, px >= 0 ? Number(flags[px + 1]) : undefined);
      return 'OK';
    }
    case 'DEL':
      return args.reduce((n, key) => n + k.del(key), 0);
    case 'EXISTS':
      return args.reduce((n, key) => n + (k.exists(key) ? 1 : 0), 0);
    case 'PTTL':
      return k.pttl(args[0]!);
    case 'PEXPIRE':
      return k.pexpire(args[0]!, Number(args[1]));
    case 'INCR':
      return Number(k.incr(args[0]!));
    case 'PUBLISH':
      return ctx.publish(args[0]!, args[1]!);
    case 'PUBSUB':
      if (args[0]?.toUpperCase() === 'NUMSUB') return args.slice(1).flatMap((channel) => [channel, numsub(channel)]);
      break;
    case 'SCAN': {
      const match = args.findIndex((a) => a.toUpperCase() === 'MATCH');
      return ['0', k.keys(match >= 0 ? args[match + 1] : '*')];
    }
    case 'CONFIG':
      return []; // no configuration parameter is known to an in-memory node
    case 'TIME': {
      const us = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1_000));
      return [String(us / 1_000_000n), String(us % 1_000_000n)];
    }
    case 'PING':
      return 'PONG';
  }
  throw new InMemoryReplyError(`ERR unknown command '${name}' (the in-memory node answers the engine's commands only)`);
}
