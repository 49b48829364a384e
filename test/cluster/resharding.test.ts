/**
 * Resharding: the slot of a contended resource moves between masters (MIGRATING/IMPORTING,
 * MIGRATE of its keys, SETSLOT NODE) again and again while workers lock it with fencing
 * tokens. The clients follow ASK, MOVED and TRYAGAIN; no lock is lost or granted twice, and
 * fencing tokens only grow.
 */
import { describe, expect, it } from '@jest/globals';
import type { Redlock } from '@redlock-nest/core';
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import { CLIENT_KINDS } from '../core/helpers.js';
import { uniqueResource } from '../harness/test-utils.js';
import { useClusterFixture } from './helpers.js';

describe.each(CLIENT_KINDS)('resharding under contention (%s)', (client) => {
  const fx = useClusterFixture(client);

  it('moves the slot of a contended lock back and forth: never two holders, tokens strictly increasing', async () => {
    const redlocks: Redlock[] = Array.from({ length: 4 }, () => fx.redlock({ onWarning: () => {} }));
    const resource = uniqueResource('reshard');
    const slot = hashSlot(`redlock:lock:${hashTag(resource)}`);
    let inside = 0;
    let overlaps = 0;
    let entries = 0;
    let lastToken = 0n;
    let regressions = 0;
    let moving = true;
    const owners = new Set<number>();

    const migrations = (async () => {
      try {
        for (let i = 0; i < 4; i++) {
          const masters = await fx.cluster.masters();
          const current = await fx.cluster.masterOfSlot(slot);
          owners.add(current.port);
          const next = masters.find((m) => m !== current)!;
          await fx.cluster.migrateSlot(slot, next);
          owners.add((await fx.cluster.masterOfSlot(slot)).port);
        }
      } finally {
        moving = false;
      }
    })();

    const workers = Array.from({ length: 8 }, async (_, w) => {
      const failures: unknown[] = [];
      while (moving || entries < 20) {
        try {
          await redlocks[w % redlocks.length]!.using(
            resource,
            5_000,
            async (lock) => {
              if (++inside > 1) overlaps++;
              entries++;
              const token = lock.fencingToken!;
              if (token <= lastToken) regressions++;
              lastToken = token;
              await new Promise((resolve) => setImmediate(resolve));
              inside--;
            },
            { fencing: true, retry: { retries: Infinity, delayMs: 5, jitterMs: 5 }, timeoutMs: 20_000 },
          );
        } catch (err) {
          // An attempt may fail while the slot moves (TRYAGAIN past the retries): tried again.
          failures.push(err);
        }
      }
      return failures.length;
    });

    await migrations;
    await Promise.all(workers);
    expect(owners.size).toBeGreaterThan(1);
    expect(entries).toBeGreaterThanOrEqual(20);
    expect(overlaps).toBe(0);
    expect(regressions).toBe(0);
  }, 120_000);
});
