/**
 * The README's examples combined: the Quick start's `@WithLock('order:<id>', { fencing: true })`
 * method called from the HTTP section's unfenced `@LockRoute('order:<id>')` handler answers
 * 200 with a token greater than every earlier one (the held lock is fenced with
 * `Lock.fence()`), on Express and Fastify; and the testing module supports the same.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, HttpCode, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { currentLock, LockRoute, RedlockModule, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule } from '@redlock-nest/nestjs/testing';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { unique } from './helpers.js';

@Injectable()
class OrdersService {
  @WithLock('order:<id>', { wait: 2_000, fencing: true })
  async pay(id: string) {
    const lock = currentLock()!;
    return { token: String(lock.fencingToken), resources: lock.resources };
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post(':id/pay')
  @HttpCode(200)
  @LockRoute('order:<id>')
  pay(@Param('id') id: string) {
    return this.orders.pay(id);
  }

  /** The same key acquired fenced from the start, for a baseline token. */
  @Post(':id/fenced')
  @HttpCode(200)
  @LockRoute('order:<id>', { fencing: true })
  fenced() {
    return { token: String(currentLock()!.fencingToken) };
  }
}

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

async function boot(imports: unknown[], makeAdapter: () => FastifyAdapter | undefined): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: imports as never[],
    controllers: [OrdersController],
    providers: [OrdersService],
  }).compile();
  const adapter = makeAdapter();
  const app = adapter ? moduleRef.createNestApplication(adapter as never) : moduleRef.createNestApplication();
  await app.init();
  if (adapter) await adapter.getInstance().ready();
  return app;
}

describe.each(adapters)('fenced @WithLock inside an unfenced @LockRoute (%s)', (_name, makeAdapter) => {
  let cluster: RedisCluster;
  let app: INestApplication;
  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    app = await boot([RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true, ttl: 5_000 })], makeAdapter);
  });
  afterAll(async () => {
    await app?.close();
    await cluster?.stop();
  });

  it('answers 200 with a fresh token greater than every earlier one, each time', async () => {
    const id = unique('o');
    const baseline = await request(app.getHttpServer()).post(`/orders/${id}/fenced`).expect(200);
    const first = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    const second = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    expect(first.body.resources).toEqual([`order:${id}`]);
    expect(BigInt(first.body.token) > BigInt(baseline.body.token)).toBe(true);
    expect(BigInt(second.body.token) > BigInt(first.body.token)).toBe(true);
    const after = await request(app.getHttpServer()).post(`/orders/${id}/fenced`).expect(200);
    expect(BigInt(after.body.token) > BigInt(second.body.token)).toBe(true);
  });
});

describe('fenced @WithLock inside an unfenced @LockRoute with RedlockTestingModule', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await boot([RedlockTestingModule.forRoot()], () => undefined);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 200 with increasing tokens from the in-memory engine', async () => {
    const id = unique('t');
    const baseline = await request(app.getHttpServer()).post(`/orders/${id}/fenced`).expect(200);
    const first = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    const second = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    expect(BigInt(first.body.token) > BigInt(baseline.body.token)).toBe(true);
    expect(BigInt(second.body.token) > BigInt(first.body.token)).toBe(true);
  });
});
