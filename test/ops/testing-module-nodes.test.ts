/**
 * RedlockTestingModule runs the core Redlock over in-memory nodes, so a user's test can put one
 * node down, slow it, restart it, or take the quorum away, and see what production would do
 * (no redis-server is started in this file).
 */
import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockLostError, QuorumUnavailableError } from '@redlock-nest/core';
import { currentLock, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import { deferred, rejection } from '../nestjs/helpers.js';
import { aborted } from '../harness/test-utils.js';

@Injectable()
class Payments {
  @WithLock('pay:<id>', { fencing: true })
  async pay(id: string): Promise<{ token: bigint | undefined; nodes: string[] }> {
    const lock = currentLock(`pay:${id}`);
    return { token: lock?.fencingToken, nodes: lock?.acquireNodes.map((n) => n.status) ?? [] };
  }

  @WithLock('job:<id>', { ttl: 300 })
  async job(id: string, started: () => void): Promise<unknown> {
    const lock = currentLock()!;
    started();
    return aborted(lock.signal); // runs until the watchdog finds the lock gone
  }
}

describe('RedlockTestingModule nodes (the core algorithm over in-memory nodes)', () => {
  let moduleRef: TestingModule;
  let locks: RedlockTestingService;
  let payments: Payments;

  // A module per test: a restarted node sits out of quorums for the largest TTL in use.
  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [Payments],
    }).compile();
    await moduleRef.init();
    locks = moduleRef.get(RedlockTestingService);
    payments = moduleRef.get(Payments);
  });
  afterEach(async () => {
    await moduleRef.close();
  });

  it('has three nodes, a quorum of two', () => {
    expect(locks.nodes.map((n) => n.name)).toEqual(['in-memory-0', 'in-memory-1', 'in-memory-2']);
    expect(locks.redlock.quorum).toBe(2);
  });

  it('locks with one node down, and the fencing tokens keep increasing', async () => {
    expect((await payments.pay('a')).token).toBe(1n);
    locks.nodes[0]!.stop();
    const paid = await payments.pay('a');
    expect(paid.token).toBe(2n);
    expect(paid.nodes[0]).not.toBe('ok'); // refused (or not answered yet when the quorum was reached)
  });

  it('fails with QuorumUnavailableError when a majority of the nodes is down', async () => {
    locks.nodes[0]!.stop();
    locks.nodes[2]!.stop();
    const err = await rejection(payments.pay('b'));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.message).toContain('in-memory-0=error');
    locks.nodes[2]!.start();
    // Monotonic, not contiguous: the failed attempt incremented the counter of the node that was up.
    expect((await payments.pay('b')).token).toBe(2n);
  });

  it('locks past a slow node (its reply later than the node timeout)', async () => {
    // The nodes are seen first. A node stalled before this process' first look at it is another case: the
    // restart rule then holds the young nodes back for up to the node timeout (its verdict waits for that look).
    expect((await payments.pay('c')).token).toBe(1n);
    locks.nodes[1]!.slow(60_000); // its pending replies are dropped when the module closes: no timer outlives the test
    const paid = await payments.pay('c');
    expect(paid.token).toBe(2n);
    expect(paid.nodes[1]).not.toBe('ok');
  });

  it('keeps fencing tokens monotonic across a node restarted empty', async () => {
    for (let i = 1; i <= 3; i++) expect((await payments.pay('d')).token).toBe(BigInt(i));
    const runId = locks.nodes[1]!.runId;
    locks.nodes[1]!.restart();
    expect(locks.nodes[1]!.runId).not.toBe(runId);
    expect(locks.nodes[1]!.get('redlock:fence:d')).toBeUndefined();
    // The restarted node sits out (restart rule) and its counter is raised from the others.
    expect((await payments.pay('d')).token).toBe(4n);
    // A second node restarted while the first still sits out: no quorum, as in production.
    locks.nodes[0]!.restart();
    expect(await rejection(payments.pay('d'))).toBeInstanceOf(QuorumUnavailableError);
  });

  it('aborts the lock signal when the watchdog finds the lock gone from a majority', async () => {
    const started = deferred();
    const call = payments.job('e', () => started.resolve());
    await started.promise;
    const lock = await locks.whenHeld('job:e');
    locks.nodes[0]!.delete(`redlock:lock:job:e`);
    locks.nodes[1]!.delete(`redlock:lock:job:e`);
    const err = await rejection(call);
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('not-owner');
    expect(lock.signal.aborted).toBe(true);
  });
});
