/**
 * RedlockTestingModule: users' services with @WithLock and @LockRoute, tested without Redis
 * (no redis-server is started in this file), including contention, waiting, a lost lock, an
 * outage and the faults of one node, all run by the core Redlock over in-memory nodes.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import request from 'supertest';
import { LockLostError, LockNotAcquiredError, QuorumUnavailableError } from '@redlock-nest/core';
import { currentLock, LockRoute, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import { deferred, rejection } from '../nestjs/helpers.js';

@Injectable()
class ReportJob {
  runs = 0;

  @WithLock('cron:report', { onLocked: 'skip' })
  async run(): Promise<string> {
    this.runs++;
    return 'done';
  }
}

@Injectable()
class Orders {
  @WithLock('order:<id>', { fencing: true })
  async pay(id: string): Promise<bigint | undefined> {
    return currentLock(`order:${id}`)?.fencingToken;
  }

  @WithLock('order:<id>', { wait: 5_000 })
  async payWaiting(id: string): Promise<string> {
    return `paid ${id}`;
  }

  @WithLock('export:<id>')
  async longExport(id: string, gate: Promise<void>): Promise<boolean | undefined> {
    const lock = currentLock();
    await gate;
    return lock?.signal.aborted;
  }

  @WithLock('outer:<id>')
  async outer(id: string): Promise<bigint | undefined> {
    return this.pay(id); // a different key: nested acquisition in the same chain
  }
}

@Controller('orders')
class OrdersController {
  @Post(':id/pay')
  @LockRoute('order:<id>')
  pay(@Param('id') id: string): { id: string; locked: boolean } {
    return { id, locked: currentLock() !== undefined };
  }
}

describe('RedlockTestingModule', () => {
  let moduleRef: TestingModule;
  let app: INestApplication;
  let locks: RedlockTestingService;
  let orders: Orders;
  let job: ReportJob;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ ttl: 3_000 })],
      providers: [Orders, ReportJob],
      controllers: [OrdersController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    locks = moduleRef.get(RedlockTestingService);
    orders = moduleRef.get(Orders);
    job = moduleRef.get(ReportJob);
  });
  afterAll(async () => {
    await app.close();
  });

  it('provides itself as RedlockService and runs @WithLock methods under the in-memory lock', async () => {
    expect(moduleRef.get(RedlockService)).toBe(locks);
    expect(await orders.pay('1')).toBe(1n);
    expect(await orders.pay('1')).toBe(2n); // fencing tokens increase per resource
    expect(await orders.outer('1')).toBe(3n);
    expect(locks.isLocked('order:1')).toBe(false); // released after each call
  });

  it("skips an onLocked: 'skip' method while another instance holds the key, and runs it after", async () => {
    const other = locks.holdElsewhere('cron:report');
    expect(await job.run()).toBeUndefined();
    expect(job.runs).toBe(0);
    other.release();
    expect(other.held).toBe(false);
    expect(await job.run()).toBe('done');
    expect(job.runs).toBe(1);
  });

  it('rejects with LockNotAcquiredError when contended, carrying the holder TTL', async () => {
    const other = locks.holdElsewhere('order:2', 30_000);
    const err = await rejection(orders.pay('2'));
    other.release();
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err.retryAfterMs).toBeGreaterThan(0);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it('makes a waiting call wait until the other instance releases', async () => {
    const other = locks.holdElsewhere('order:3');
    let settled = false;
    const call = orders.payWaiting('3').finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve)); // let the call reach its wait
    expect(settled).toBe(false);
    other.release();
    expect(await call).toBe('paid 3');
  });

  it('simulates a lost lock: the signal aborts and the call rejects with LockLostError', async () => {
    const gate = deferred();
    const call = orders.longExport('7', gate.promise);
    const lock = await locks.whenHeld('export:7');
    expect(lock.signal.aborted).toBe(false);
    expect(locks.loseLock('export:7')).toBe(true);
    expect(lock.signal.aborted).toBe(true);
    expect(locks.isLocked('export:7')).toBe(false); // someone else could take it now
    gate.resolve();
    const err = await rejection(call);
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('not-owner');
    expect(locks.loseLock('export:7')).toBe(false);
  });

  it("emits the core's typed events, so metrics and logging code can be tested without Redis", async () => {
    const seen: string[] = [];
    const offs = (['acquire', 'wait', 'acquired', 'extend', 'lost', 'release', 'failure'] as const).map((event) =>
      locks.redlock.on(event, (e) => seen.push(`${event}:${e.resources.join(',')}`)),
    );
    // Released once the waiting call waits: released before, its first attempt would take the lock.
    const waiting9 = new Promise<void>((resolve) =>
      offs.push(
        locks.redlock.on('wait', (e) => {
          if (e.resources.join(',') === 'order:9') resolve();
        }),
      ),
    );
    try {
      await orders.pay('8');
      const other = locks.holdElsewhere('order:9', 30_000);
      await rejection(orders.pay('9'));
      const waiting = orders.payWaiting('9');
      await waiting9;
      other.release();
      await waiting;
      const gate = deferred();
      const call = orders.longExport('10', gate.promise);
      await locks.whenHeld('export:10');
      locks.loseLock('export:10');
      gate.resolve();
      await rejection(call);
    } finally {
      for (const off of offs) off();
    }
    // A call may wait more than once: its first wait subscribes to release notices and, unless the
    // subscription was confirmed before its attempt, returns to try once more under it (no release
    // can then go unnoticed). Consecutive waits count as one here.
    expect(seen.filter((event, i) => !(event.startsWith('wait:') && seen[i - 1] === event))).toEqual([
      'acquire:order:8',
      'acquired:order:8',
      'release:order:8',
      'acquire:order:9',
      'failure:order:9',
      'acquire:order:9',
      'wait:order:9',
      'acquired:order:9',
      'release:order:9',
      'acquire:export:10',
      'acquired:export:10',
      'lost:export:10',
      'release:export:10',
    ]);
  });

  it('simulates a Redis outage: QuorumUnavailableError, and 503 on a @LockRoute', async () => {
    locks.setUnavailable(true);
    try {
      expect(await rejection(orders.pay('4'))).toBeInstanceOf(QuorumUnavailableError);
      await request(app.getHttpServer()).post('/orders/4/pay').expect(503);
    } finally {
      locks.setUnavailable(false);
    }
  });

  it('locks @LockRoute handlers: 409 with Retry-After when held elsewhere, 201 otherwise', async () => {
    const other = locks.holdElsewhere('order:5', 20_000);
    const busy = await request(app.getHttpServer()).post('/orders/5/pay').expect(409);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
    other.release();
    const ok = await request(app.getHttpServer()).post('/orders/5/pay').expect(201);
    expect(ok.body).toEqual({ id: '5', locked: true });
    expect(locks.isLocked('order:5')).toBe(false);
  });

  it("replaces an app's RedlockModule.forRoot import through overrideModule (by reference)", async () => {
    // Never connected: the override removes the real module (port 1 has no Redis anyway).
    const locksModule = RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'], isGlobal: true, independenceCheck: 'off' });
    @Module({ imports: [locksModule], providers: [ReportJob] })
    class AppModule {}
    const ref = await Test.createTestingModule({ imports: [AppModule] })
      .overrideModule(locksModule)
      .useModule(RedlockTestingModule.forRoot())
      .compile();
    await ref.init();
    try {
      const testing = ref.get(RedlockTestingService);
      expect(ref.get(RedlockService)).toBe(testing);
      const other = testing.holdElsewhere('cron:report');
      expect(await ref.get(ReportJob).run()).toBeUndefined();
      other.release();
      expect(await ref.get(ReportJob).run()).toBe('done');
    } finally {
      await ref.close();
    }
  });
});
