/** `listLocks`' script (scripts/describe-keys.ts) as an in-memory node runs it: the same replies. */
import type { LuaScript } from '../nodes/lua-script.js';
import type { PrimitiveContext, PrimitiveScript } from './in-memory-primitives.js';
import { DESCRIBE_SCRIPT } from '../scripts/describe-keys.js';

/** As the script's `redis.pcall`: a key of another type reads as absent. */
function tryRead<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function describeKeys(ctx: PrimitiveContext, keys: readonly string[], args: readonly string[]): unknown {
  const limit = Number(args[0]);
  return keys.map((key, i) => {
    if (args[i + 1] === 'z') {
      const set = tryRead(() => ctx.keys.zset(key));
      const entries = set?.entries() ?? [];
      if (entries.length === 0) return ['none'];
      return ['zset', -1, entries.length, ...entries.slice(0, limit).flatMap((e) => [e.member, String(e.score)])];
    }
    const value = tryRead(() => ctx.keys.get(key));
    if (value === undefined) return ['none'];
    return ['string', args[i + 1] === 'g' ? ctx.keys.pttl(key) : -1, value];
  });
}

/** The listing's scripts, each with its JavaScript implementation. */
export const listingScripts: ReadonlyArray<readonly [LuaScript, PrimitiveScript]> = [[DESCRIBE_SCRIPT, describeKeys]];
