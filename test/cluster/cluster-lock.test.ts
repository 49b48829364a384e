import { describe, expect, it } from '@jest/globals';
import { NodeIndependenceError, Redlock } from '@redlock-nest/core';
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import type { ReleaseNotifier } from '../../packages/core/src/wakeups/release-notifier.js';
import { CLIENT_KINDS } from '../core/helpers.js';
import { rejection, uniqueResource, until } from '../harness/test-utils.js';
import { resourcesInDifferentSlots, useClusterFixture } from './helpers.js';

/** Exposes the notifier, a protected member, to the tests. */
class ProbedRedlock extends Redlock {
  get notices(): ReleaseNotifier {
    return this.releaseNotices;
  }
}

const NEVER_POLL = { retries: 50, delayMs: 600_000, jitterMs: 0 };

describe.each(CLIENT_KINDS)('a Redis Cluster (%s) as a lock node', (client) => {
  const fx = useClusterFixture(client);

  it('grants a lock once: a second acquirer is refused until the release', async () => {
    const a = fx.redlock();
    const b = fx.redlock();
    const resource = uniqueResource('once');
    const lock = await a.acquire(resource, 10_000);
    expect(await b.tryAcquire(resource, 10_000)).toBeNull();
    const direct = fx.direct();
    expect(await direct.get(`redlock:lock:${hashTag(resource)}`)).toBe(lock.value);
    await lock.release();
    const next = await b.tryAcquire(resource, 10_000);
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('hands out increasing fencing tokens (lock key and counter share a slot: no CROSSSLOT)', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('fence');
    const tokens: bigint[] = [];
    for (let i = 0; i < 3; i++) {
      const lock = await redlock.acquire(resource, 10_000, { fencing: true });
      tokens.push(lock.fencingToken!);
      tokens.push((await lock.fence()).fencingToken!);
      await lock.release();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  });

  it('takes resources in different slots all-or-nothing, fencing included', async () => {
    const redlock = fx.redlock();
    const other = fx.redlock();
    const [r1, r2, r3] = resourcesInDifferentSlots(3) as [string, string, string];
    const lock = await redlock.acquire([r1, r2, r3], 10_000, { fencing: true });
    expect([...lock.fencingTokens!.keys()]).toEqual([r1, r2, r3]);
    // Any one of them conflicts.
    expect(await other.tryAcquire(r2, 10_000)).toBeNull();
    await lock.extend(10_000);
    const before = lock.fencingTokens!.get(r3)!;
    await lock.fence();
    expect(lock.fencingTokens!.get(r3)! > before).toBe(true);
    expect((await lock.release()).released).toBe(1);
    const direct = fx.direct();
    for (const r of [r1, r2, r3]) expect(await direct.exists(`redlock:lock:${hashTag(r)}`)).toBe(0);
  });

  it('leaves nothing behind when one slot of a multi-resource lock is held by someone else', async () => {
    const holder = fx.redlock();
    const redlock = fx.redlock();
    const [r1, r2, r3] = resourcesInDifferentSlots(3) as [string, string, string];
    const held = await holder.acquire(r2, 10_000);
    expect(await redlock.tryAcquire([r1, r2, r3], 10_000)).toBeNull();
    const direct = fx.direct();
    // Released before the node answered "held": r1 and r3 are free again at once.
    expect(await direct.exists(`redlock:lock:${hashTag(r1)}`)).toBe(0);
    expect(await direct.exists(`redlock:lock:${hashTag(r3)}`)).toBe(0);
    expect(await direct.get(`redlock:lock:${hashTag(r2)}`)).toBe(held.value);
    await held.release();
  });

  it('uses hash-tagged keys whose tag survives braces in the resource name', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('a}b{c%');
    const lock = await redlock.acquire(resource, 10_000, { fencing: true });
    expect(hashTag(resource)).toBe(`{${resource.replace('%', '%25').replace('}', '%7D').replace('{', '%7B')}}`);
    expect(hashSlot(`redlock:lock:${hashTag(resource)}`)).toBe(hashSlot(`redlock:fence:${hashTag(resource)}`));
    await lock.release();
  });

  it('wakes a waiter on release (release notices through the cluster)', async () => {
    const a = fx.redlock();
    // A poll every 10 minutes: the acquisition completing at all proves a notice woke it.
    const b = fx.track(new ProbedRedlock([fx.node()], { onWarning: () => {}, retry: NEVER_POLL }));
    const resource = uniqueResource('notice');
    const lock = await a.acquire(resource, 30_000);
    const waiting = b.acquire(resource, 10_000);
    await until(() => b.notices.waiting === 1 && b.notices.stats.armed === 1, 'the waiter parked on an armed channel');
    // Sharded pub/sub: the channel is subscribed on its shard's master only, not cluster-wide.
    const direct = fx.direct();
    await direct.ping();
    const masters = direct.nodes('master');
    const key = `redlock:lock:${hashTag(resource)}`;
    const sharded = await Promise.all(masters.map((m) => m.call('PUBSUB', 'SHARDCHANNELS') as Promise<string[]>));
    const plain = await Promise.all(masters.map((m) => m.call('PUBSUB', 'CHANNELS') as Promise<string[]>));
    expect(sharded.filter((channels) => channels.includes(key))).toHaveLength(1);
    expect(plain.flat()).not.toContain(key);
    await lock.release();
    const next = await waiting;
    expect(b.notices.stats.notice).toBe(1);
    expect(b.notices.stats.poll).toBe(0);
    await next.release();
  });

  it('the independence check finds two entries that are the same cluster (different startup nodes), and passes one cluster', async () => {
    const [s0, , , s3] = fx.cluster.urls;
    const twice = fx.redlock({}, [fx.node([s0!]), fx.node([s3!]), fx.cluster.urls[1]!]);
    const err = await rejection(twice.checkIndependence());
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect(String(err.message)).toMatch(/clusters sharing the server/);
    const reports = await fx.redlock().checkIndependence();
    expect(reports[0]!.clusterNodeIds).toHaveLength(6);
  });

  it('refuses a key prefix with braces and two clusters that share a server', () => {
    expect(() => new Redlock([fx.node()], { keyPrefix: 'app{x}:' })).toThrow(/keyPrefix/);
    expect(() => new Redlock([fx.node(fx.cluster.urls.slice(0, 2)), fx.node(fx.cluster.urls.slice(1))])).toThrow(/share the server/);
    expect(() => new Redlock([fx.node(fx.cluster.urls.slice(0, 1)), fx.cluster.urls[0]!])).toThrow(/share the server/);
    expect(() => new Redlock([{ cluster: [] }])).toThrow(/non-empty array/);
  });
});
