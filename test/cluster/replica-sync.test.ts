/**
 * replicaSync under a burst: the grants of one tick to one master are confirmed by one WAIT on
 * that master's connection (WAIT counts every earlier write of its connection), not one WAIT
 * each: WAIT blocks its connection until a replica acknowledges, so one per grant would queue a
 * replica round trip per grant and time a burst out. Every confirmed grant is on a replica.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { Lock } from '@redlock-nest/core';
import { CLIENT_KINDS } from '../core/helpers.js';
import type { RedisServer } from '../harness/redis-server.js';
import { uniqueResource, until } from '../harness/test-utils.js';
import { useClusterFixture } from './helpers.js';

const BURST = 1_000;

/** Runs `command` on one server of the cluster (not routed). */
async function onServer(server: RedisServer, ...command: string[]): Promise<string> {
  const direct = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    return String(await direct.call(command[0]!, ...command.slice(1)));
  } finally {
    direct.disconnect();
  }
}

async function stat(server: RedisServer, section: string, field: RegExp): Promise<number> {
  return Number(field.exec(await onServer(server, 'INFO', section))?.[1] ?? 0);
}

describe.each(CLIENT_KINDS)('replicaSync on a Redis Cluster (%s)', (client) => {
  const fx = useClusterFixture(client);

  it(`confirms ${BURST} grants issued in one tick with a few WAITs per master, and each confirmed grant is on a replica`, async () => {
    const redlock = fx.redlock({ onWarning: () => {}, replicaSync: { replicas: 1, timeoutMs: 200 } });
    // A fresh cluster: a replica's link is up before its first acknowledgement of the offset.
    const confirmed = (): Promise<boolean> =>
      redlock.acquire(uniqueResource('warm'), 5_000, { retry: false }).then(
        (lock) => lock.release().then(() => true),
        () => false,
      );
    await until(confirmed, 'a grant is confirmed by a replica');
    const masters = await fx.cluster.masters();
    await Promise.all(masters.map((m) => onServer(m, 'CONFIG', 'RESETSTAT')));
    const prefix = uniqueResource('burst');
    const locks: Lock[] = await Promise.all(
      Array.from({ length: BURST }, (_, i) => redlock.acquire(`${prefix}-${i}`, 30_000, { timeoutMs: 20_000 })),
    );
    const waits = (await Promise.all(masters.map((m) => stat(m, 'commandstats', /cmdstat_wait:calls=(\d+)/)))).reduce((a, b) => a + b);
    const replicas = (await Promise.all(masters.map((m) => fx.cluster.replicasOf(m)))).flat();
    const onReplicas = (await Promise.all(replicas.map((r) => stat(r, 'keyspace', /^db0:keys=(\d+)/m)))).reduce((a, b) => a + b);
    await Promise.all(locks.map((l) => l.release()));
    expect(waits).toBeGreaterThan(0);
    expect(waits).toBeLessThan(BURST / 4);
    expect(onReplicas).toBeGreaterThanOrEqual(BURST);
  }, 60_000);
});
