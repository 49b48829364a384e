/**
 * Fencing tokens stay strictly increasing across rolling restarts of nodes without
 * persistence (docs/fencing.md, "Rolling restarts"): one node at a time is restarted EMPTY
 * and is the slow one (SIGSTOP: it answers after the round resolved, its client already
 * gave up on the reply), so only the catch-up raises it to the issued token. Between two
 * restarts, the documented check (./caught-up.ts) must pass.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redlock } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisCluster } from '../harness/redis-server.js';
import { reachable, until } from '../harness/test-utils.js';
import { caughtUp } from './caught-up.js';

// The restart rule off: these tests exercise the fencing catch-up itself, which is what keeps
// tokens monotonic when the rule is off (test/core/restart-rule.test.ts covers the rule on).
const OPTIONS = { onWarning: () => undefined, nodeTimeoutMs: 200, restartRule: false } as const;
const RESOURCE = 'invoice:rolling';

/**
 * The check a rolling restart needs before the next node goes down (docs/fencing.md): node
 * `i` holds the counters the other nodes hold. False (instead of a throw) on a library that
 * never raises late granters, so the test goes on and shows the tokens going backwards.
 */
async function nodeCaughtUp(cluster: RedisCluster, i: number): Promise<boolean> {
  const admin = cluster.servers.map((s) => new Redis(s.url));
  try {
    const others = admin.filter((_, j) => j !== i);
    await until(() => caughtUp(admin[i]!, others, [RESOURCE]), `node ${i} caught up`, 3_000);
    return true;
  } catch {
    return false;
  } finally {
    admin.forEach((c) => c.disconnect());
  }
}

function expectStrictlyIncreasing(tokens: readonly bigint[]): void {
  for (let i = 1; i < tokens.length; i++) {
    if (!(tokens[i]! > tokens[i - 1]!)) {
      throw new Error(`fencing token went backwards at acquisition ${i + 1}: ${tokens.join(', ')}`);
    }
  }
}

describe('fencing tokens across rolling restarts of empty nodes', () => {
  let cluster: RedisCluster | undefined;
  const instances: Redlock[] = [];
  afterEach(async () => {
    for (const s of cluster?.servers ?? []) s.resume();
    await Promise.all(instances.splice(0).map((r) => r.close()));
    await cluster?.stop();
    cluster = undefined;
  });

  async function fencedToken(redlock: Redlock, tokens: bigint[]): Promise<bigint> {
    const lock = await redlock.acquire(RESOURCE, 5_000, { fencing: true });
    await lock.release();
    tokens.push(lock.fencingToken!);
    return lock.fencingToken!;
  }

  it("the issue's scenario: 3 nodes, node 0 restarts empty and answers late, then node 1 restarts empty: no 1…8, 4", async () => {
    cluster = await RedisCluster.start(3);
    const redlock = new Redlock(cluster.urls, OPTIONS);
    instances.push(redlock);
    const tokens: bigint[] = [];
    for (let i = 0; i < 5; i++) await fencedToken(redlock, tokens);

    await cluster.server(0).restart();
    await reachable(redlock, 0);
    cluster.server(0).pause(); // slow: not in the early quorum, its grants arrive after the rounds resolved
    for (let i = 0; i < 3; i++) await fencedToken(redlock, tokens);
    cluster.server(0).resume();
    const nodeZeroCaughtUp = await nodeCaughtUp(cluster, 0);

    await cluster.server(1).restart();
    await reachable(redlock, 1);
    cluster.server(2).pause(); // the only node that remembers answers last: the quorum is {0, 1}
    await fencedToken(redlock, tokens);
    cluster.server(2).resume();

    expectStrictlyIncreasing(tokens);
    expect(nodeZeroCaughtUp).toBe(true);
  });

  for (const n of [3, 5]) {
    it(`${n} nodes restarted empty one at a time, each answering last while it catches up, hand out strictly increasing tokens`, async () => {
      const c = await RedisCluster.start(n);
      cluster = c;
      // Two client processes' worth of connections, taking turns.
      const clients = [new Redlock(c.urls, OPTIONS), new Redlock(c.urls, OPTIONS)];
      instances.push(...clients);
      const tokens: bigint[] = [];
      let turn = 0;
      const next = (): Promise<bigint> => fencedToken(clients[turn++ % clients.length]!, tokens);
      for (let i = 0; i < 3; i++) await next();

      const lagging: number[] = [];
      for (let k = 0; k < n; k++) {
        await c.server(k).restart();
        await Promise.all(clients.map((r) => reachable(r, k)));
        c.server(k).pause();
        for (let i = 0; i < 3; i++) await next();
        c.server(k).resume();
        if (!(await nodeCaughtUp(c, k))) lagging.push(k);
      }
      // The nodes restarted first (the ones most likely to have lagged) now form the quorum:
      // the others answer last.
      const quorum = Math.floor(n / 2) + 1;
      for (let i = quorum; i < n; i++) c.server(i).pause();
      for (let i = 0; i < 3; i++) await next();
      for (const s of c.servers) s.resume();

      expectStrictlyIncreasing(tokens);
      expect(lagging).toEqual([]);
      expect(tokens).toHaveLength(3 + 3 * n + 3);
    }, 60_000);
  }
});
