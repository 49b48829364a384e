/**
 * The floor: the least a correct Redlock client can do. SET NX PX on every node and
 * resolve at the quorum-th OK; release by an owner-checked script (by SHA) resolving at the
 * quorum-th reply. No validity bookkeeping, no timers. Without `poll` it never retries
 * (uncontended use only); with it, a failed attempt releases what it did set (once every
 * reply is in) and tries again after `delayMs ± jitterMs`: polling at its cheapest.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Contender, Held } from './contender.js';

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Resolves when `need` of `replies` fulfilled with a truthy value; rejects once that is impossible. */
function quorumOf(replies: Array<Promise<unknown>>, need: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let ok = 0;
    let failed = 0;
    const bad = (): void => {
      if (++failed > replies.length - need) reject(new Error('no quorum'));
    };
    for (const reply of replies) {
      reply.then((value) => (value ? ++ok === need && resolve() : bad()), bad);
    }
  });
}

/** Retry timing of the polling floor: `delayMs ± jitterMs`. */
export interface Poll {
  readonly delayMs: number;
  readonly jitterMs: number;
}

export class RawFloor implements Contender {
  readonly name: string;
  private readonly quorum: number;

  private constructor(
    private readonly clients: Redis[],
    private readonly sha: string,
    private readonly poll: Poll | undefined,
  ) {
    this.quorum = Math.floor(clients.length / 2) + 1;
    this.name = poll ? 'raw floor, polling' : 'raw ioredis floor';
  }

  static async create(urls: readonly string[], poll?: Poll): Promise<RawFloor> {
    // Plain writes: ioredis' auto-pipelining would delay every command to setImmediate.
    const clients = urls.map((url) => new Redis(url));
    const shas = await Promise.all(clients.map((c) => c.script('LOAD', RELEASE) as Promise<string>));
    return new RawFloor(clients, shas[0]!, poll);
  }

  async acquire(resource: string, ttlMs: number): Promise<Held> {
    const key = `floor:${resource}`;
    const token = randomBytes(16).toString('base64url');
    for (;;) {
      const sets = this.clients.map((c) => c.set(key, token, 'PX', ttlMs, 'NX'));
      try {
        await quorumOf(sets, this.quorum);
        break;
      } catch (err) {
        if (!this.poll) throw err;
        // Release the partial holds (only where the SET succeeded), then wait and retry.
        const replies = await Promise.allSettled(sets);
        const held = this.clients.filter(
          (_, i) => replies[i]!.status === 'fulfilled' && (replies[i] as PromiseFulfilledResult<unknown>).value,
        );
        await Promise.all(held.map((c) => c.evalsha(this.sha, 1, key, token)));
        const { delayMs, jitterMs } = this.poll;
        await new Promise((resolve) => setTimeout(resolve, delayMs + (Math.random() * 2 - 1) * jitterMs));
      }
    }
    return {
      release: () =>
        quorumOf(
          this.clients.map((c) => c.evalsha(this.sha, 1, key, token).then(() => true)),
          this.quorum,
        ),
      extend: () => Promise.reject(new Error('the floor does not extend')),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.quit()));
  }
}
