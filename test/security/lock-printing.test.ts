/**
 * A Lock never shows its owner token (whoever knows it can extend or release the lock) and
 * never throws when printed: util.inspect, JSON.stringify, String() and every event payload
 * carry resources, expiration, fencing token and state only. A route may return currentLock().
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redlock, type Lock, type RedlockEventName } from '@redlock-nest/core';
import { currentLock, LockRoute, RedlockModule, WithLock } from '@redlock-nest/nestjs';
import { inspect } from 'node:util';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { lockKey, rejection, uniqueResource } from '../harness/test-utils.js';
import { Redis } from 'ioredis';

const EVENTS: RedlockEventName[] = ['acquire', 'wait', 'acquired', 'extend', 'lost', 'release', 'failure'];

/** Everything a logger could make of a value: inspect at full depth, and JSON (bigints as strings). */
function printed(value: unknown): string {
  return `${inspect(value, { depth: Infinity, showHidden: false })}\n${JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`;
}

describe('printing a Lock', () => {
  let cluster: RedisCluster;
  let redlock: Redlock;
  const payloads: unknown[] = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    redlock = new Redlock(cluster.urls, { onWarning: () => undefined });
    for (const event of EVENTS) redlock.on(event, (payload) => payloads.push({ event, payload }));
  });
  afterAll(async () => {
    await redlock.close();
    await cluster.stop();
  });

  it('inspect, JSON.stringify and String() show resources, integer expiration, the token as a string and the state, never the owner token', async () => {
    const resource = uniqueResource('print');
    const lock = await redlock.acquire(resource, 10_000, { fencing: true });
    try {
      const shown = inspect(lock, { depth: Infinity });
      const json = JSON.stringify(lock); // threw before: circular structure (Timeout), then BigInt
      const text = String(lock);
      for (const out of [shown, json, text]) expect(out).not.toContain(lock.value);

      expect(Number.isInteger(lock.expiration)).toBe(true);
      const parsed = JSON.parse(json) as Record<string, unknown>;
      expect(parsed).toEqual({
        resources: [resource],
        expiration: expect.any(Number),
        fencingToken: lock.fencingToken!.toString(),
        state: 'held',
      });
      expect(Number.isInteger(parsed.expiration)).toBe(true);
      expect(shown).toMatch(/^Lock \{/);
      expect(shown).toContain(`fencingToken: '${lock.fencingToken}'`);
      expect(shown).not.toMatch(/Timeout|\[Function|ops:|acquiredAtMono/);
      expect(text).toContain(JSON.stringify([resource]));
      // Generic walkers (spread, Object.keys, structured loggers) do not find it either.
      expect(Object.keys(lock)).not.toContain('value');
      expect(inspect({ ...lock }, { depth: Infinity })).not.toContain(lock.value);
    } finally {
      await lock.release();
    }
    expect(JSON.parse(JSON.stringify(lock))).toMatchObject({ state: 'released' });
    expect(inspect(lock)).toContain("state: 'released'");
  });

  it('a lost lock prints as lost, and an unfenced one has no token field', async () => {
    const resource = uniqueResource('print-lost');
    const lock = await redlock.acquire(resource, 10_000);
    const direct = cluster.urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
    try {
      await Promise.all(direct.map((c) => c.del(lockKey(resource))));
      await rejection(lock.extend(10_000));
    } finally {
      direct.forEach((c) => c.disconnect());
    }
    expect(lock.toJSON()).toEqual({ resources: [resource], expiration: expect.any(Number), state: 'lost' });
    expect(String(lock)).toContain(' lost ');
    await lock.release();
    expect(lock.state).toBe('lost');
  });

  it('no event payload carries an owner token (acquire, wait, acquired, extend, lost, release, failure)', async () => {
    payloads.length = 0;
    const resource = uniqueResource('print-events');
    const tokens: string[] = [];
    const first = await redlock.acquire([resource, `${resource}:b`], 10_000, { fencing: true });
    tokens.push(first.value);
    await first.extend(10_000);
    // A waiter (wait) that gives up (failure).
    await rejection(redlock.acquire(resource, 10_000, { retry: { retries: 1, delayMs: 10, jitterMs: 0 } }));
    await first.release();
    const second = await redlock.acquire(resource, 10_000);
    tokens.push(second.value);
    second.lose('expired'); // lost (the internal hook an expiry timer calls)
    await second.release();

    const seen = new Set(payloads.map((p) => (p as { event: string }).event));
    expect([...seen].sort()).toEqual([...EVENTS].sort());
    const all = printed(payloads);
    for (const token of tokens) expect(all).not.toContain(token);
  });
});

@Injectable()
class Orders {
  @WithLock('order:<id>', { fencing: true })
  async view(id: string): Promise<Lock | undefined> {
    return currentLock(`order:${id}`);
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: Orders) {}

  /** Returning the lock itself: a 500 before (JSON.stringify threw on its timers). */
  @Get(':id/lock')
  @LockRoute('order:<id>', { fencing: true })
  lock() {
    return currentLock();
  }

  @Get(':id/inner')
  inner(@Param('id') id: string) {
    return this.orders.view(id);
  }
}

describe('a Nest route returning currentLock()', () => {
  let cluster: RedisCluster;
  let app: INestApplication;

  beforeAll(async () => {
    cluster = await RedisCluster.start(1);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, independenceCheck: 'off', onWarning: () => undefined })],
      controllers: [OrdersController],
      providers: [Orders],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
    await cluster.stop();
  });

  it('answers 200 with the lock as JSON, fencing token as a string, no owner token', async () => {
    const id = uniqueResource('route');
    for (const path of [`/orders/${id}/lock`, `/orders/${id}/inner`]) {
      const res = await request(app.getHttpServer()).get(path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        resources: [`order:${id}`],
        expiration: expect.any(Number),
        fencingToken: expect.stringMatching(/^\d+$/),
        // Serialized once the handler returned: by then a @WithLock call has released its lock.
        state: expect.stringMatching(/^(held|released)$/),
      });
      expect(Object.keys(res.body as object)).not.toContain('value');
    }
  });
});
