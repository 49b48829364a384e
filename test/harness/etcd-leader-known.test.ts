/**
 * When a restarted etcd member could count in a quorum again, by its own log
 * (EtcdMember.leaderKnownAt): the etcd chaos run ends a "majority down" window there. It ended
 * at `start()`'s resolution, when the member serves clients, which waits for the member's own
 * publish through raft: on a loaded machine seconds after the healthy majority granted locks,
 * which then looked granted without quorum.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EtcdCluster, leaderLineTime } from '@redlock-nest/redis-process';

describe('etcd member: when it knew a leader', () => {
  it('reads the time from a zap "elected leader" line, and from no other line', () => {
    const line = (msg: string): string =>
      JSON.stringify({ level: 'info', ts: '2026-12-04T21:33:41.979Z', logger: 'raft', caller: 'raft/node.go:325', msg });
    expect(leaderLineTime(line('raft.node: ffebbe6cbc5810ad elected leader 4c69419e6934b3b9 at term 5'))).toBe(
      Date.UTC(2026, 11, 4, 21, 33, 41, 979),
    );
    expect(leaderLineTime(line('ffebbe6cbc5810ad became follower at term 5'))).toBeUndefined();
    expect(leaderLineTime(line('raft.node: ffebbe6cbc5810ad lost leader 4c69419e6934b3b9 at term 6'))).toBeUndefined();
    expect(leaderLineTime('raft.node: ffebbe6cbc5810ad elected leader 4c69419e6934b3b9 at term 5')).toBeUndefined();
  });

  describe('on a cluster of 3', () => {
    let cluster: EtcdCluster;
    beforeAll(async () => {
      cluster = await EtcdCluster.start({ members: 3 });
    });
    afterAll(async () => {
      await cluster.stop();
    });

    it('knows a leader before it serves, on start and after a majority came back', async () => {
      for (const m of cluster.members) expect(m.leaderKnownAt).toBeDefined();
      const [a, b] = cluster.members;
      await Promise.all([a!.kill(), b!.kill()]);
      const before = Date.now();
      await a!.start('existing');
      const served = Date.now();
      expect(a!.leaderKnownAt).toBeGreaterThanOrEqual(before);
      expect(a!.leaderKnownAt).toBeLessThanOrEqual(served);
      // The majority (a and the survivor) takes writes.
      const put = await fetch(`${a!.url}/v3/kv/put`, {
        method: 'POST',
        body: JSON.stringify({ key: Buffer.from('leader-known').toString('base64'), value: 'MQ==' }),
      });
      expect(put.status).toBe(200);
      await b!.start('existing');
    });
  });
});
