/**
 * The floor: the least a correct Redlock client can do. SET NX PX on every node and
 * resolve at the quorum-th OK; release by an owner-checked script (by SHA) resolving at the
 * quorum-th reply. No retries, no validity bookkeeping, no timers: uncontended use only.
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

export class RawFloor implements Contender {
  readonly name = 'raw ioredis floor';
  private readonly quorum: number;

  private constructor(
    private readonly clients: Redis[],
    private readonly sha: string,
  ) {
    this.quorum = Math.floor(clients.length / 2) + 1;
  }

  static async create(urls: readonly string[]): Promise<RawFloor> {
    // Plain writes: ioredis' auto-pipelining would delay every command to setImmediate.
    const clients = urls.map((url) => new Redis(url));
    const shas = await Promise.all(clients.map((c) => c.script('LOAD', RELEASE) as Promise<string>));
    return new RawFloor(clients, shas[0]!);
  }

  async acquire(resource: string, ttlMs: number): Promise<Held> {
    const key = `floor:${resource}`;
    const token = randomBytes(16).toString('base64url');
    await quorumOf(
      this.clients.map((c) => c.set(key, token, 'PX', ttlMs, 'NX')),
      this.quorum,
    );
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
