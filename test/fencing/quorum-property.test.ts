/**
 * Property: whatever majority of nodes answers each acquisition, fencing tokens are
 * strictly increasing. Which nodes answer is decided per acquisition by fast-check;
 * a node left out is cut off at the client (a network partition): either the request
 * never reaches it, or it is applied and the reply is lost (the INCR still happens),
 * the two ways a real partition or timeout can fall.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { InterceptedClient } from '../harness/intercepted-client.js';
import { RedisCluster } from '../harness/redis-server.js';

type Cut = 'none' | 'drop-request' | 'drop-reply';

/** A client whose link to its node can be cut, one way or the other. */
class PartitionableClient extends InterceptedClient {
  cut: Cut = 'none';
  get options() {
    return { enableOfflineQueue: false, commandTimeout: 200, maxRetriesPerRequest: 0 };
  }
  protected async through<T>(_name: string, send: () => Promise<T>): Promise<T> {
    if (this.cut === 'drop-request') throw new Error('ECONNRESET (partitioned)');
    const reply = await send();
    if (this.cut === 'drop-reply') throw new Error('ECONNRESET (partitioned after the command was applied)');
    return reply;
  }
}

describe('fencing tokens under random quorums (property)', () => {
  let cluster: RedisCluster;
  let raw: Redis[][];
  beforeAll(async () => {
    cluster = await RedisCluster.start(5);
    // Two Redlock "processes", each with its own connections to every node.
    raw = [cluster.urls.map((u) => new Redis(u)), cluster.urls.map((u) => new Redis(u))];
  });
  afterAll(async () => {
    raw.flat().forEach((c) => c.disconnect());
    await cluster.stop();
  });

  it('are strictly increasing whatever majority answered each acquisition', async () => {
    const clients = raw.map((row) => row.map((c) => new PartitionableClient(c)));
    const redlocks = clients.map((row) => new Redlock(row, { onWarning: () => undefined, retry: false }));
    const cutArb = fc.constantFrom<Cut>('drop-request', 'drop-reply');
    // One step: which instance acquires, and for each node whether it answers (and how it fails).
    const stepArb = fc
      .record({
        who: fc.integer({ min: 0, max: 1 }),
        cuts: fc.array(fc.option(cutArb, { nil: 'none' as const, freq: 2 }), { minLength: 5, maxLength: 5 }),
      })
      .filter((s) => s.cuts.filter((c) => c !== 'none').length <= 2); // a majority answers
    let run = 0;
    let acquisitions = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 25 }), async (steps) => {
          const resource = `prop:${run++}`;
          const tokens: bigint[] = [];
          for (const step of steps) {
            clients.forEach((row) => row.forEach((c, i) => (c.cut = row === clients[step.who] ? step.cuts[i]! : 'none')));
            const lock = await redlocks[step.who]!.acquire(resource, 10_000, { fencing: true });
            acquisitions++;
            tokens.push(lock.fencingToken!);
            // Heal before releasing, so a lost-reply SET does not linger until its TTL.
            clients.flat().forEach((c) => (c.cut = 'none'));
            await lock.release();
            // release() resolves at a quorum: the other instance's next acquire (its own connections)
            // could reach a node before this release does. A PING on the same connections is answered
            // after the release there (Redis answers a connection in order): every node applied it.
            await Promise.all(raw[step.who]!.map((c) => c.ping()));
          }
          for (let i = 1; i < tokens.length; i++) {
            if (!(tokens[i]! > tokens[i - 1]!)) return false;
          }
          return true;
        }),
        { numRuns: 60 },
      );
    } finally {
      await Promise.all(redlocks.map((r) => r.close()));
    }
    expect(acquisitions).toBeGreaterThan(60);
  });
});
