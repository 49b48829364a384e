/**
 * Operators' tools against real redis-servers: `inspect` shows who holds a resource
 * (never the owner token), `forceRelease` frees it everywhere, moves the fencing counter
 * past the old holder's token and emits an audit event.
 */
import { describe, expect, it } from '@jest/globals';
import { RedlockArgumentError, type RedlockEventMap } from '@redlock-nest/core';
import { rejection, uniqueResource, until, useFixture } from '../core/helpers.js';

describe('inspect and forceRelease', () => {
  const fx = useFixture(3);

  it('inspect: held on every node, TTL left, the fencing counter, waiters, and a short owner hash instead of the token', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('inspect');
    const lock = await redlock.acquire(resource, 10_000, { fencing: true });
    await fx.settled(resource, lock.value);
    const waiter = fx.redlock().acquire(resource, 10_000, { retry: { retries: 1_000, delayMs: 5_000, jitterMs: 0 } });
    let state = await redlock.inspect(resource);
    await until(async () => (state = await redlock.inspect(resource)).nodes.some((n) => (n.waiters ?? 0) > 0), 'a waiter subscribed');
    expect(state.nodes).toHaveLength(3);
    for (const n of state.nodes) {
      expect(n.held).toBe(true);
      expect(n.ttlMs).toBeGreaterThan(0);
      expect(n.fencingCounter).toBe(String(lock.fencingToken));
      expect(n.owner).toMatch(/^[0-9a-f]{12}$/);
    }
    expect(new Set(state.nodes.map((n) => n.owner)).size).toBe(1);
    expect(state.holder).toBe(state.nodes[0]!.owner);
    expect(JSON.stringify(state)).not.toContain(lock.value);
    await lock.release();
    await (await waiter).release();
    const free = await redlock.inspect(resource);
    expect(free.nodes.every((n) => !n.held)).toBe(true);
    expect(free.holder).toBeUndefined();
  });

  it('forceRelease frees the lock on every node, raises the fencing counter past the old token, and emits the audit event', async () => {
    const redlock = fx.redlock();
    const resource = uniqueResource('stuck');
    const stuck = await fx.redlock().acquire(resource, 30_000, { fencing: true });
    await fx.settled(resource, stuck.value);
    const events: Array<RedlockEventMap['forceRelease']> = [];
    redlock.on('forceRelease', (e) => events.push(e));

    const result = await redlock.forceRelease(resource, { reason: 'worker host died, INC-1234' });

    expect(result.released).toBe(3);
    expect(result.fencingCounter).toBe(stuck.fencingToken! + 1n);
    expect(await fx.values(resource)).toEqual([null, null, null]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      resources: [resource],
      reason: 'worker host died, INC-1234',
      released: 3,
      fencingCounter: String(stuck.fencingToken! + 1n),
    });
    expect(events[0]!.holder).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(events[0])).not.toContain(stuck.value);
    // The next holder's token is above the old holder's and the forced release's.
    const next = await redlock.acquire(resource, 5_000, { fencing: true });
    expect(next.fencingToken! > result.fencingCounter).toBe(true);
    // The old holder finds out on its next extension.
    await expect(stuck.extend(30_000)).rejects.toThrow();
    await next.release();
  });

  it('forceRelease without a reason is a typed error naming the fix', async () => {
    const err = await rejection(fx.redlock().forceRelease('x', { reason: ' ' }));
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(err.message).toMatch(/reason/);
  });
});
