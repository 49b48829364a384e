/**
 * Typed lifecycle events of the core Redlock against real redis-servers: the sequence of
 * an uncontended and a contended acquisition, failures, extension, loss and release, and
 * that no payload ever carries the owner token.
 */
import { describe, expect, it } from '@jest/globals';
import * as core from '@redlock-nest/core';
import {
  LockLostError,
  LockNotAcquiredError,
  QuorumUnavailableError,
  type Redlock,
  type RedlockEventMap,
  type RedlockEventName,
} from '@redlock-nest/core';
import { RedlockEmitter } from '@redlock-nest/core/internal';
import { useFixture, rejection, uniqueResource } from '../core/helpers.js';
import { freePort } from '../harness/redis-server.js';

const EVENTS: RedlockEventName[] = ['acquire', 'wait', 'acquired', 'extend', 'lost', 'release', 'failure'];

type Recorded = { [E in RedlockEventName]: { event: E; payload: RedlockEventMap[E] } }[RedlockEventName];

/** Records every event of `redlock`, in order. */
function record(redlock: Redlock): Recorded[] {
  const seen: Recorded[] = [];
  for (const event of EVENTS) redlock.on(event, (payload) => seen.push({ event, payload } as Recorded));
  return seen;
}

function names(seen: readonly Recorded[]): string[] {
  return seen.map((r) => r.event);
}

function find<E extends RedlockEventName>(seen: readonly Recorded[], event: E): RedlockEventMap[E] {
  const hit = seen.find((r) => r.event === event);
  if (!hit) throw new Error(`no '${event}' event in ${names(seen).join(', ')}`);
  return hit.payload as RedlockEventMap[E];
}

describe('Redlock events', () => {
  const fx = useFixture(3);

  it('reports acquire → acquired → extend → release with durations and node outcomes, never the token', async () => {
    const redlock = fx.redlock({ onWarning: () => {} });
    const seen = record(redlock);
    const resource = uniqueResource('events-basic');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    await lock.extend(5_000);
    await lock.release();

    expect(names(seen)).toEqual(['acquire', 'acquired', 'extend', 'release']);
    const acquired = find(seen, 'acquired');
    expect(acquired).toMatchObject({ resources: [resource], ttlMs: 5_000, attempts: 1, waitedMs: 0, fencing: true });
    expect(acquired.durationMs).toBeGreaterThan(0);
    expect(acquired.nodes.filter((n) => n.status === 'ok').length).toBeGreaterThanOrEqual(redlock.quorum);
    expect(find(seen, 'extend')).toMatchObject({ ok: true, error: undefined, ttlMs: 5_000 });
    const release = find(seen, 'release');
    expect(release.released).toBeGreaterThanOrEqual(redlock.quorum);
    expect(release.heldMs).toBeGreaterThan(0);

    const text = JSON.stringify(seen);
    expect(text).not.toContain(lock.value);
  });

  it('reports a wait per contended attempt, then acquired with the attempts and the time waited', async () => {
    const holder = fx.redlock({ onWarning: () => {} });
    const waiter = fx.redlock({ onWarning: () => {} });
    const seen = record(waiter);
    const resource = uniqueResource('events-contended');
    const held = await holder.acquire(resource, 10_000);
    // The holder lets go as soon as the waiter reports its first wait: no timing involved.
    waiter.once('wait', () => void held.release());
    const lock = await waiter.acquire(resource, 5_000, { retry: { retries: 50, delayMs: 50, jitterMs: 20 } });
    await lock.release();

    const wait = find(seen, 'wait');
    expect(wait.attempt).toBe(1);
    expect(wait.nodes.some((n) => n.status === 'held')).toBe(true);
    expect(wait.retryAfterMs).toBeGreaterThan(0);
    const acquired = find(seen, 'acquired');
    expect(acquired.attempts).toBeGreaterThanOrEqual(2);
    expect(acquired.waitedMs).toBeGreaterThan(0);
    expect(names(seen).slice(0, 2)).toEqual(['acquire', 'wait']);
    expect(names(seen).slice(-2)).toEqual(['acquired', 'release']);
  });

  it('reports failure with the error class and the nodes when the resource stays held', async () => {
    const holder = fx.redlock({ onWarning: () => {} });
    const other = fx.redlock({ onWarning: () => {} });
    const seen = record(other);
    const resource = uniqueResource('events-busy');
    const held = await holder.acquire(resource, 10_000);
    expect(await other.tryAcquire(resource, 1_000)).toBeNull();
    await held.release();

    expect(names(seen)).toEqual(['acquire', 'failure']);
    const failure = find(seen, 'failure');
    expect(failure).toMatchObject({ resources: [resource], attempts: 1, error: LockNotAcquiredError.name });
    expect(failure.nodes.filter((n) => n.status === 'held').length).toBeGreaterThanOrEqual(other.quorum);
  });

  it('reports QuorumUnavailableError as failure when a majority of nodes is unreachable', async () => {
    const dead = [await freePort(), await freePort()].map((port) => `redis://127.0.0.1:${port}`);
    const warnings: string[] = [];
    const redlock = fx.redlock({ onWarning: (m) => warnings.push(m) }, [fx.urls[0]!, ...dead]);
    const seen = record(redlock);
    const err = await rejection(redlock.acquire(uniqueResource('events-down'), 1_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    const failure = find(seen, 'failure');
    expect(failure.error).toBe(QuorumUnavailableError.name);
    expect(failure.nodes.filter((n) => n.status === 'error').length).toBe(2);
  });

  it('reports a failed extension and then lost (not-owner) when the keys vanished', async () => {
    const redlock = fx.redlock({ onWarning: () => {} });
    const seen = record(redlock);
    const resource = uniqueResource('events-lost');
    const lock = await redlock.acquire(resource, 10_000);
    await fx.drop(resource, [0, 1, 2]);
    const err = await rejection(lock.extend(10_000));
    expect(err).toBeInstanceOf(LockLostError);
    await lock.release();

    expect(names(seen)).toEqual(['acquire', 'acquired', 'lost', 'extend', 'release']);
    expect(find(seen, 'lost')).toMatchObject({ resources: [resource], reason: 'not-owner' });
    expect(find(seen, 'lost').nodes.every((n) => n.status === 'absent' || n.status === 'pending')).toBe(true);
    expect(find(seen, 'extend')).toMatchObject({ ok: false, error: LockLostError.name });
    expect(find(seen, 'release').released).toBe(0);
  });

  it('keeps locking when a listener throws, and stops calling a listener once it is removed', async () => {
    const warnings: string[] = [];
    const redlock = fx.redlock({ onWarning: (m) => warnings.push(m) });
    const off = redlock.on('acquired', () => {
      throw new Error('listener bug');
    });
    const lock = await redlock.acquire(uniqueResource('events-throwing'), 5_000);
    expect(warnings).toEqual([expect.stringContaining('listener bug')]);
    await lock.release();

    off();
    expect(redlock.listenerCount('acquired')).toBe(0);
    let calls = 0;
    const counter = (): void => void calls++;
    redlock.on('release', counter);
    redlock.off('release', counter);
    await (await redlock.acquire(uniqueResource('events-off'), 5_000)).release();
    expect(calls).toBe(0);
  });

  it('is a typed emitter whose telemetry is composed, not a public base class', () => {
    expect(fx.redlock({ onWarning: () => {} })).toBeInstanceOf(RedlockEmitter);
    expect(Object.keys(core)).not.toContain('RedlockTelemetry');
  });
});
