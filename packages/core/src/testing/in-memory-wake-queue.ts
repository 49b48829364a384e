/**
 * The addressed wake-up scripts (scripts/wake-queue.ts) as an in-memory node runs them: the same
 * replies, step for step.
 */
import type { LuaScript } from '../nodes/lua-script.js';
import type { PrimitiveContext as CommandContext } from './in-memory-primitives.js';
import { LEAVE_SCRIPT, PASS_SCRIPT, QUEUE_SCRIPT, UNLOCK_SCRIPT, UNLOCK_WAKE_SCRIPT, WAITERS_SCRIPT } from '../scripts/wake-queue.js';

type ScriptImpl = (ctx: CommandContext, keys: readonly string[], args: readonly string[]) => unknown;

/** As the scripts' `wake_head`: pops until a listening process was told; the dead ones are skipped. */
function wakeHead(ctx: CommandContext, lockKey: string, waitersKey: string, prefix: string): number {
  for (let i = 0; i <= 16; i++) {
    const head = ctx.keys.zset(waitersKey)?.at(0);
    if (!head) return 0;
    ctx.keys.zrem(waitersKey, head.member);
    if (ctx.publish(prefix + head.member, lockKey) > 0) return 1;
  }
  return 0;
}

function queue(ctx: CommandContext, waitersKey: string, id: string, score: string, ttl: string): void {
  ctx.keys.zadd(waitersKey, Number(score), id);
  ctx.keys.pexpire(waitersKey, Number(ttl));
}

/** The wake-up scripts, for the in-memory node's table of the engine's scripts. */
export const wakeQueueScripts: ReadonlyArray<readonly [LuaScript, ScriptImpl]> = [
  [
    QUEUE_SCRIPT,
    (ctx, [lockKey, waitersKey], [token, ttl, id, score, queueTtl]) => {
      const holder = ctx.keys.get(lockKey!);
      if (holder === token) {
        ctx.keys.pexpire(lockKey!, Number(ttl));
        return [1];
      }
      queue(ctx, waitersKey!, id!, score!, queueTtl!);
      if (holder === undefined) return [0, -2];
      return [0, ctx.keys.pttl(lockKey!)];
    },
  ],
  [
    UNLOCK_SCRIPT,
    (ctx, [lockKey], [token]) => {
      if (ctx.keys.get(lockKey!) !== token) return 0;
      ctx.keys.del(lockKey!);
      return 1;
    },
  ],
  [
    UNLOCK_WAKE_SCRIPT,
    (ctx, [lockKey, waitersKey], [token, prefix, requeueId, requeueScore, queueTtl, wake]) => {
      const holder = ctx.keys.get(lockKey!);
      let released = 0;
      if (holder === token) {
        ctx.keys.del(lockKey!);
        released = 1;
      }
      if (requeueId !== '') queue(ctx, waitersKey!, requeueId!, requeueScore!, queueTtl!);
      if (wake === '1' && (released === 1 || holder === undefined) && wakeHead(ctx, lockKey!, waitersKey!, prefix!) === 0) {
        ctx.publish(lockKey!, '1');
      }
      return released;
    },
  ],
  [
    PASS_SCRIPT,
    (ctx, [lockKey, waitersKey], [prefix]) => {
      if (ctx.keys.get(lockKey!) !== undefined) return 0;
      if (wakeHead(ctx, lockKey!, waitersKey!, prefix!) === 1) return 1;
      ctx.publish(lockKey!, '1');
      return 0;
    },
  ],
  [
    LEAVE_SCRIPT,
    (ctx, [waitersKey], [id]) => {
      return ctx.keys.zrem(waitersKey!, id!);
    },
  ],
  [
    WAITERS_SCRIPT,
    (ctx, [waitersKey], [id]) => {
      const z = ctx.keys.zset(waitersKey!);
      if (!z) return 0;
      return z.size - (id !== '' && z.score(id!) !== undefined ? 1 : 0);
    },
  ],
];
