import { RedlockArgumentError, StaleFencingTokenError } from '../errors/errors.js';
import { LockNode } from '../nodes/lock-node.js';
import { defineScript } from '../nodes/lua-script.js';
import { labelOf, type RedisClientLike } from '../nodes/redis-client.js';

/**
 * Compare-and-set on a hash `{ value, fence }`: the access goes ahead only if its
 * token is ≥ the highest token the resource has seen, and then records the token.
 * An equal token is the same holder accessing again. Tokens are compared as decimal
 * strings (length, then lexically), so they may exceed 2^53.
 *
 * KEYS[1] the resource; ARGV: token, mode ('w' write value, 'r' read and fence), value.
 * Returns {1, value|false} when accepted, {0, seenToken} when stale.
 */
export const FENCED_ACCESS_SCRIPT = defineScript(
  'fenced-access',
  `local seen = redis.call('HGET', KEYS[1], 'fence')
local t = ARGV[1]
if seen and (#t < #seen or (#t == #seen and t < seen)) then
  return {0, seen}
end
if ARGV[2] == 'w' then
  redis.call('HSET', KEYS[1], 'fence', t, 'value', ARGV[3])
  return {1, ARGV[3]}
end
if not seen or seen ~= t then redis.call('HSET', KEYS[1], 'fence', t) end
return {1, redis.call('HGET', KEYS[1], 'value')}`,
);

/** Plain read, no fencing: `{value, fence}`. */
export const READ_SCRIPT = defineScript('fenced-read', `return redis.call('HMGET', KEYS[1], 'value', 'fence')`);

/** A value in a {@link RedisFencedStore} and the highest token that accessed it. */
export interface FencedValue {
  readonly value: string | undefined;
  readonly token: bigint;
}

/** Options of a {@link RedisFencedStore}. */
export interface RedisFencedStoreOptions {
  /** Prefix of the keys the store writes. Default `'fenced:'`. */
  readonly keyPrefix?: string;
}

function checkToken(token: unknown): bigint {
  if (typeof token !== 'bigint' || token < 0n) {
    throw new RedlockArgumentError(
      `A fencing token must be a non-negative bigint (lock.fencingToken of a lock acquired with { fencing: true }), got ${typeof token}.`,
    );
  }
  return token;
}

/**
 * The resource side of fencing for data kept in Redis (fencing tokens as Martin Kleppmann's
 * "How to do distributed locking" describes them): every access carries the lock's
 * fencing token, and the store refuses a token lower than one it has already seen, with
 * a {@link StaleFencingTokenError}: a write is never silently dropped.
 *
 * For read-modify-write, read with the token too (`readForUpdate`): that records the
 * token, so a paused older holder that read before us cannot write after us.
 *
 * Use a Redis that is NOT one of the lock nodes: the protected resource is separate
 * from the lock service.
 *
 * @example
 * ```ts
 * const store = new RedisFencedStore(new Redis('redis://data:6379'));
 * await redlock.using('account:7', 5_000, async (lock) => {
 *   const current = await store.readForUpdate('account:7', lock.fencingToken!);
 *   const balance = Number(current ?? 0) + 100;
 *   await store.write('account:7', String(balance), lock.fencingToken!); // throws if a newer holder came
 * }, { fencing: true });
 * ```
 */
export class RedisFencedStore {
  private readonly prefix: string;
  /** Runs the scripts the way lock nodes do (by SHA, sent in full on first use); the client stays the caller's. */
  private readonly node: LockNode;

  constructor(client: RedisClientLike, options: RedisFencedStoreOptions = {}) {
    const given: unknown = client; // JavaScript callers can pass anything
    if (!given || typeof (given as RedisClientLike).evalsha !== 'function') {
      throw new RedlockArgumentError('RedisFencedStore needs an ioredis client (new Redis(url)) as its first argument.');
    }
    this.node = new LockNode({ client, owned: false, label: labelOf(client, 0) });
    this.prefix = options.keyPrefix ?? 'fenced:';
  }

  /**
   * Writes `value` if `token` is ≥ the highest token seen for `key`.
   * @throws {StaleFencingTokenError} a newer lock holder has already accessed `key`.
   */
  async write(key: string, value: string, token: bigint): Promise<void> {
    await this.access(key, checkToken(token), 'w', value);
  }

  /**
   * Reads `key` for a read-modify-write by the holder of `token`: records the token
   * (so older holders can no longer write) and returns the current value.
   * @throws {StaleFencingTokenError} a newer lock holder has already accessed `key`.
   */
  async readForUpdate(key: string, token: bigint): Promise<string | undefined> {
    return this.access(key, checkToken(token), 'r', '');
  }

  /** Reads `key` without fencing: its value and the highest token seen, or undefined if never written. */
  async read(key: string): Promise<FencedValue | undefined> {
    const reply = (await this.node.run(READ_SCRIPT, [this.prefix + key], [])) as Array<string | null>;
    const [value, fence] = reply;
    if (fence == null) return undefined;
    return { value: value ?? undefined, token: BigInt(fence) };
  }

  private async access(key: string, token: bigint, mode: 'r' | 'w', value: string): Promise<string | undefined> {
    const reply = (await this.node.run(FENCED_ACCESS_SCRIPT, [this.prefix + key], [token.toString(), mode, value])) as [
      number | string,
      string | null | false,
    ];
    if (Number(reply[0]) !== 1) {
      throw new StaleFencingTokenError({ resource: key, token, currentToken: BigInt(String(reply[1])) });
    }
    const current = reply[1];
    return typeof current === 'string' ? current : undefined;
  }
}
