/**
 * EtcdLocks under faults on a real 3-member cluster (elections of 500 ms): the leader SIGKILLed
 * and SIGSTOPped while 3 processes contend (no overlap, tokens still increasing, every process
 * finishes); Kleppmann's pause (a holder SIGSTOPped past its TTL: the next holder gets a higher
 * token, the paused one's fenced write is refused and its signal aborts); a majority down
 * (QuorumUnavailableError naming the members within timeoutMs, a holder's signal aborts by its
 * TTL, locks work again once they return). Needs `npm run build`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { LockLostError, QuorumUnavailableError, RedisFencedStore } from '@redlock-nest/core';
import { EtcdLocks } from '@redlock-nest/etcd';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { aborted, CORE_ENTRY, ETCD_ENTRY, EtcdCluster, grantsIn, rejection, runFixture, uniqueResource } from './helpers.js';

let cluster: EtcdCluster;
let dir: string;
const open: EtcdLocks[] = [];

function engine(): EtcdLocks {
  const locks = new EtcdLocks({ hosts: cluster.hosts, requestTimeoutMs: 400 });
  open.push(locks);
  return locks;
}

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
  dir = mkdtempSync(join(tmpdir(), 'redlock-nest-etcd-faults-'));
});

afterEach(async () => {
  // Every member back up before the next case: resume the paused, restart the killed together.
  for (const m of cluster.members) m.resume();
  await Promise.all(cluster.members.filter((m) => m.state === 'killed').map((m) => m.start('existing')));
});

afterAll(async () => {
  await Promise.all(open.map((l) => l.close()));
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('EtcdLocks under faults', () => {
  it('the leader killed, then the new leader paused, during contention: no overlap, tokens increasing, progress', async () => {
    const resource = uniqueResource('failover');
    const runDir = mkdtempSync(join(dir, 'failover-'));
    const workers = ['a', 'b', 'c'].map((name) =>
      runFixture('etcd-worker.mjs', [ETCD_ENTRY, JSON.stringify(cluster.hosts), resource, name, '20', '3000', runDir, '10']),
    );
    let grants = 0;
    const afterGrants = (n: number): Promise<unknown> =>
      Promise.race(workers.map((w) => w.line((l) => l.startsWith('granted') && ++grants >= n)));
    await afterGrants(5);
    const first = await cluster.leader();
    await first.kill();
    await afterGrants(20);
    await first.start('existing');
    const second = await cluster.leader();
    second.pause();
    await afterGrants(35);
    second.resume();
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
    expect(workers.flatMap((w) => w.lines.filter((l) => l.startsWith('overlap')))).toEqual([]);
    const granted = grantsIn(runDir);
    expect(granted).toHaveLength(60);
    for (let i = 1; i < granted.length; i++) expect(granted[i]![1]).toBeGreaterThan(granted[i - 1]![1]);
  }, 120_000);

  it("Kleppmann's pause: the paused holder's fenced write is refused and its signal aborts", async () => {
    const redis = await RedisServer.start();
    const client = new Redis({ port: redis.port, host: '127.0.0.1' });
    try {
      const resource = uniqueResource('pause');
      const holder = runFixture('etcd-paused-holder.mjs', [
        ETCD_ENTRY,
        CORE_ENTRY,
        JSON.stringify(cluster.hosts),
        resource,
        '1500',
        String(redis.port),
      ]);
      const firstToken = BigInt((await holder.line((l) => l.startsWith('held'))).split(' ')[1]!);
      holder.child.kill('SIGSTOP');
      // The next holder gets in once the paused holder's lease expired on etcd.
      const next = await engine().acquire(resource, 5_000, { timeoutMs: 10_000 });
      expect(next.fencingToken).toBeGreaterThan(firstToken);
      await new RedisFencedStore(client).write(resource, 'next holder', next.fencingToken!);
      holder.child.kill('SIGCONT');
      holder.child.stdin!.write('go\n');
      expect(await holder.line((l) => l === 'refused' || l === 'written' || l.startsWith('error'))).toBe('refused');
      expect(await holder.line((l) => l.startsWith('aborted'))).toBe('aborted expired');
      expect(await holder.exited).toBe(0);
      await next.release();
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });

  it('a majority down: QuorumUnavailableError within timeoutMs, holders lose by their TTL, all works after they return', async () => {
    const locks = engine();
    const resource = uniqueResource('majority');
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const lost = locks.using(resource, 2_000, (lock) => {
      entered();
      return aborted(lock.signal);
    });
    await inside;
    const down = cluster.members.slice(0, 2);
    await Promise.all(down.map((m) => m.kill()));
    // The deadline bounds every request: a hang fails the test by its own timeout. How close to
    // timeoutMs it settles is speed (bench/), not asserted here: a busy core makes it settle later,
    // and the outcome is still correct.
    const err = await rejection(engine().acquire(uniqueResource('other'), 3_000, { timeoutMs: 1_500 }));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.message).toContain(new URL(cluster.hosts[0]!).host);
    const reason = await rejection(lost);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toBe('expired');
    await Promise.all(down.map((m) => m.start('existing')));
    const again = await engine().acquire(resource, 3_000, { timeoutMs: 10_000 });
    expect(again.fencingToken).toBeDefined();
    await again.release();
  }, 60_000);
});
