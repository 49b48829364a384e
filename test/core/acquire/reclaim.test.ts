/**
 * A retry takes back a key of its own. Every attempt of one acquisition uses the same owner
 * token; when a failed attempt's release is lost (its reply timed out on our side and the
 * script never ran, a dropped connection), the node keeps our key. The retry's `SET NX` is
 * refused by it, and the node must not then read as "held by another owner" until the key
 * expires: the retry reclaims it (owner-checked) with a fresh TTL.
 *
 * The lost release is made deterministic with an ACL: on node 0 the library's user may not
 * run DEL, so every release script there fails (an ERR reply) before deleting anything.
 */
import { describe, expect, it } from '@jest/globals';
import { RECLAIM_SCRIPT } from '../../../packages/core/src/scripts/acquire.js';
import { CLIENT_KINDS, lockKey, nodesOf, uniqueResource, until, useFixture } from '../helpers.js';

const USER = 'locker';
const PASSWORD = 'reclaim-test-pw';

/**
 * DEL commands node `i` refused (INFO commandstats). Not the ERR count of INFO errorstats: a
 * connection's own setup (ioredis' CLIENT SETINFO, unknown to Redis 7.0) counts there too, and
 * the subscriber opened while the attempt waits could make it grow before the release was refused.
 */
async function refusedDels(fx: ReturnType<typeof useFixture>, i: number): Promise<number> {
  const info = await fx.node(i).info('commandstats');
  return Number(/^cmdstat_del:calls=\d+,.*rejected_calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

describe.each(CLIENT_KINDS)('a retry reclaims its own key left by a lost release (%s)', (client) => {
  const fx = useFixture(3);

  it('wins the quorum with the node that still holds its key, instead of waiting for that key to expire', async () => {
    await fx.node(0).call('ACL', 'SETUSER', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all', '-del');
    const urls = fx.urls.map((url, i) => (i === 0 ? url.replace('redis://', `redis://${USER}:${PASSWORD}@`) : url));
    const made = nodesOf(client, urls);
    try {
      // Retries come by the fallback poll (nobody publishes here): 300 ms apart.
      const redlock = fx.redlock({ retry: { retries: 100, delayMs: 300, jitterMs: 0 }, cohort: false }, made.nodes);
      const resource = uniqueResource('lost-release');
      await fx.holdFor(resource, [1, 2]);
      const refusedBefore = await refusedDels(fx, 0);

      const acquiring = redlock.acquire(resource, 60_000, { timeoutMs: 15_000 });
      // The first attempt won node 0 only, lost at 1 and 2, and its release on node 0 failed: our key stays there.
      await until(async () => (await refusedDels(fx, 0)) > refusedBefore, 'the release on node 0 was refused');
      const left = await fx.node(0).get(lockKey(resource));
      expect(left).not.toBeNull();
      // Node 2 frees up (behind the library's back: no notice); node 1 stays held by the other owner.
      await fx.drop(resource, [2]);

      const lock = await acquiring;
      expect(lock.value).toBe(left);
      // Nodes 0 and 2 are the quorum (node 1 may still be pending: the round resolves at a majority).
      expect([lock.acquireNodes[0]!.status, lock.acquireNodes[2]!.status]).toEqual(['ok', 'ok']);
      // Reclaimed with the attempt's TTL, not left to run out with the first attempt's.
      expect(await fx.node(0).pttl(lockKey(resource))).toBeGreaterThan(30_000);
      expect(await fx.values(resource)).toEqual([left, 'someone-else', left]);
    } finally {
      await made.close();
    }
  }, 60_000);
});

describe('the reclaim script', () => {
  const fx = useFixture(1);
  const reclaim = (key: string, token: string): Promise<unknown> => fx.node(0).eval(RECLAIM_SCRIPT.source, 1, key, token, 30_000);

  it("renews a key holding our token, and never takes a free key or another owner's", async () => {
    const key = lockKey(uniqueResource('reclaim-script'));
    // Free: the round that sent this follow-up may have released meanwhile; a grant here would leak a key.
    expect(await reclaim(key, 'ours')).toEqual([0, -2]);
    expect(await fx.node(0).exists(key)).toBe(0);
    await fx.node(0).set(key, 'theirs', 'PX', 10_000);
    const [held, pttl] = (await reclaim(key, 'ours')) as [number, number];
    expect([held, pttl > 0]).toEqual([0, true]);
    expect(await fx.node(0).get(key)).toBe('theirs');
    await fx.node(0).set(key, 'ours', 'PX', 1_000);
    expect(await reclaim(key, 'ours')).toEqual([1]);
    expect(await fx.node(0).pttl(key)).toBeGreaterThan(20_000);
  });
});
