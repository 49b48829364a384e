import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StaleFencingTokenError } from '@redlock-nest/core';
import { OrdersRepository } from '../../sample-app/src/orders/orders.repository.js';

/** The fenced write of the sample app's orders database (no Redis involved). */
describe('OrdersRepository fenced capture', () => {
  let dir: string;
  let repo: OrdersRepository;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-orders-'));
    repo = new OrdersRepository(join(dir, 'orders.sqlite'));
    repo.seed(3);
  });
  afterEach(() => {
    repo.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('captures with a token, records it as the fence and one payment row', () => {
    const payment = repo.capture(1, 'a', 5n);
    expect(payment).toMatchObject({ orderId: 1, instance: 'a', fence: 5n });
    expect(repo.find(1)).toMatchObject({ status: 'paid', paidBy: 'a', fence: 5n });
    expect(repo.paymentsOf(1)).toHaveLength(1);
  });

  it('accepts the same token again (the same holder writing twice)', () => {
    repo.capture(1, 'a', 5n);
    expect(() => repo.capture(1, 'a', 5n)).not.toThrow();
    expect(repo.find(1)!.fence).toBe(5n);
  });

  it('refuses a lower token with StaleFencingTokenError, writes nothing and records the refusal', () => {
    repo.capture(1, 'new-holder', 7n);
    let error: unknown;
    try {
      repo.capture(1, 'paused-holder', 6n);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(StaleFencingTokenError);
    expect(error).toMatchObject({ resource: 'order:1', token: 6n, currentToken: 7n });
    expect(repo.find(1)).toMatchObject({ paidBy: 'new-holder', fence: 7n });
    expect(repo.paymentsOf(1)).toHaveLength(1);
    expect(repo.report()).toMatchObject({ payments: 1, paidTwice: 0, staleWritesRejected: 1 });
  });

  it('keeps every digit of tokens above 2^53 (INTEGER with BigInt binding)', () => {
    const big = 2n ** 62n + 1n;
    repo.capture(2, 'a', big);
    expect(repo.find(2)!.fence).toBe(big);
    expect(() => repo.capture(2, 'b', big - 1n)).toThrow(StaleFencingTokenError);
    expect(repo.paymentsOf(2).map((p) => p.fence)).toEqual([big]);
  });

  it('without a token (the no-locks baseline) a second capture charges the order twice', () => {
    repo.capture(3, 'a', undefined);
    repo.capture(3, 'b', undefined);
    expect(repo.paymentsOf(3)).toHaveLength(2);
    expect(repo.report().paidTwice).toBe(1);
  });

  it('shares the file between connections (two instances, one database)', () => {
    const other = new OrdersRepository(join(dir, 'orders.sqlite'));
    try {
      repo.capture(1, 'a', 3n);
      expect(() => other.capture(1, 'b', 2n)).toThrow(StaleFencingTokenError);
      expect(other.find(1)).toMatchObject({ paidBy: 'a', fence: 3n });
    } finally {
      other.close();
    }
  });
});
