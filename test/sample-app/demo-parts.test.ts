import { describe, expect, it } from '@jest/globals';
import { parseDemoArgs } from '../../sample-app/src/demo/demo-options.js';
import { planRequests } from '../../sample-app/src/demo/load-generator.js';
import { exitCodeOf } from '../../sample-app/src/demo/summary.js';
import { classify } from '../../sample-app/src/demo/tally.js';
import { exclusionBreaks, maxConcurrent, tokensIncrease } from '../../sample-app/src/demo/tour/intervals.js';
import type { TourReport } from '../../sample-app/src/demo/tour/tour.js';

const answer = (status: number, body: Record<string, unknown> = {}) => ({ status, headers: {}, body });
const at = (start: number, end: number, instance = 'a') => ({ instance, start, end });
const tour = (...parts: Array<{ ran: boolean; ok: boolean }>): TourReport => ({
  ok: parts.every((p) => p.ok),
  durationMs: 1,
  parts: parts.map((p) => ({ ...p, name: 'part', line: '', figures: {} })),
});
const ledger = (paidTwice: number) => ({ orders: 1, paidOrders: 1, payments: 1 + paidTwice, paidTwice, staleWritesRejected: 0 });

describe('race demo parts', () => {
  it('plans every order on every instance, attempts on one order next to each other', () => {
    const queues = planRequests(4, 12, 3);
    expect(queues.flat()).toHaveLength(12);
    for (let order = 1; order <= 4; order++) {
      const where = queues.map((q) => q.filter((r) => r.orderId === order).length);
      expect(where).toEqual([1, 1, 1]);
    }
    // Each queue goes through the orders in order, so the same order is in flight everywhere at once.
    for (const q of queues) expect(q.map((r) => r.orderId)).toEqual([1, 2, 3, 4]);
  });

  it('tells a stale-write refusal from a lock conflict', () => {
    expect(classify(answer(409, { error: 'StaleFencingToken' }))).toBe('stale');
    expect(classify(answer(409, { error: 'Conflict' }))).toBe('locked');
    expect(classify(answer(423, { error: 'Locked' }))).toBe('locked');
    expect(classify(answer(201))).toBe('paid');
    expect(classify(answer(200))).toBe('alreadyPaid');
    expect(classify(answer(503))).toBe('unavailable');
    expect(classify(answer(500))).toBe('error');
  });

  it('exits 1 on any double payment, 2 when the stale write could not be staged, else 0', () => {
    const staged = { ok: true } as Parameters<typeof exitCodeOf>[2];
    const missed = { ok: false } as Parameters<typeof exitCodeOf>[2];
    expect(exitCodeOf('locks', ledger(0), staged)).toBe(0);
    expect(exitCodeOf('locks', ledger(1), staged)).toBe(1);
    expect(exitCodeOf('locks', ledger(0), missed)).toBe(2);
    expect(exitCodeOf('no-locks', ledger(0), missed)).toBe(0);
    expect(exitCodeOf('no-locks', ledger(3), missed)).toBe(1);
  });

  it('fails the demo when a primitive of the tour broke its promise (1) or could not run (2)', () => {
    const staged = { ok: true } as Parameters<typeof exitCodeOf>[2];
    expect(exitCodeOf('locks', ledger(0), staged, tour({ ran: true, ok: true }))).toBe(0);
    expect(exitCodeOf('locks', ledger(0), staged, tour({ ran: true, ok: true }, { ran: true, ok: false }))).toBe(1);
    expect(exitCodeOf('locks', ledger(0), staged, tour({ ran: false, ok: false }))).toBe(2);
  });

  it('tells overlapping sections from hand-offs, and rising tokens from falling ones', () => {
    // Ends and starts in the same millisecond are a hand-off, not an overlap.
    expect(maxConcurrent([at(0, 10), at(10, 20), at(20, 30)])).toBe(1);
    expect(maxConcurrent([at(0, 10), at(5, 20, 'b'), at(6, 7, 'c')])).toBe(3);
    expect(exclusionBreaks([at(0, 10), at(10, 20)])).toBe(0);
    expect(exclusionBreaks([at(0, 10), at(9, 20)])).toBe(2);
    // A writer overlapping a reader breaks the rule; readers among themselves do not.
    expect(exclusionBreaks([at(20, 30)], [at(0, 10), at(5, 15)])).toBe(0);
    expect(exclusionBreaks([at(20, 30)], [at(25, 40)])).toBe(1);
    expect(
      tokensIncrease([
        { section: at(10, 20), fence: 3n },
        { section: at(0, 10), fence: 2n },
      ]),
    ).toBe(true);
    expect(
      tokensIncrease([
        { section: at(10, 20), fence: 2n },
        { section: at(0, 10), fence: 3n },
      ]),
    ).toBe(false);
  });

  it('parses flags and refuses unknown ones', () => {
    expect(parseDemoArgs(['--short', '--no-locks'])).toMatchObject({ short: true, locks: false, orders: 60, requests: 600 });
    expect(parseDemoArgs(['--orders', '10', '--requests', '50'])).toMatchObject({ orders: 10, requests: 50, locks: true });
    expect(() => parseDemoArgs(['--nolocks'])).toThrow(/Unknown flag "--nolocks"/);
    expect(() => parseDemoArgs(['--orders', 'many'])).toThrow(/--orders needs a whole number/);
  });

  it('runs on etcd with --etcd or LOCK_ENGINE=etcd: 3 members and a TTL with room for raft writes', () => {
    expect(parseDemoArgs(['--short'])).toMatchObject({ engine: 'redis', nodes: 5, ttlMs: 1_000 });
    expect(parseDemoArgs(['--short', '--etcd'])).toMatchObject({ engine: 'etcd', nodes: 3, ttlMs: 2_000 });
    expect(parseDemoArgs([], { LOCK_ENGINE: 'etcd' })).toMatchObject({ engine: 'etcd', nodes: 3, ttlMs: 3_000 });
    expect(parseDemoArgs(['--etcd', '--ttl', '5000'])).toMatchObject({ engine: 'etcd', ttlMs: 5_000 });
  });
});
