import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BadRequestException,
  Body,
  Controller,
  Get,
  HttpCode,
  Injectable,
  Param,
  Post,
  Put,
  UseFilters,
  UseGuards,
  type CanActivate,
  type INestApplication,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ApiOperation, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { currentLock, LockRoute, RedlockExceptionFilter, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { StaleFencingTokenError } from '@redlock-nest/core';
import type { Redis } from 'ioredis';
import { request as httpRequest } from 'node:http';
import { Observable } from 'rxjs';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, unique, until, type Deferred } from './helpers.js';

/** Per-id gates: a handler for `id` waits until the test opens its gate. */
class Gates {
  private readonly gates = new Map<string, Deferred>();
  private readonly waiting = new Map<string, Deferred>();
  hold(id: string): void {
    this.gates.set(id, deferred());
    this.waiting.set(id, deferred());
  }
  open(id: string): void {
    this.gates.get(id)?.resolve();
  }
  /** Resolves once the handler for `id` is inside its critical section. */
  entered(id: string): Promise<void> {
    return this.waiting.get(id)!.promise;
  }
  async pass(id: string): Promise<void> {
    this.waiting.get(id)?.resolve();
    await this.gates.get(id)?.promise;
  }
}
const gates = new Gates();

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

@Injectable()
class Ledger {
  @WithLock('order:<id>', { wait: false })
  async record(id: string) {
    return currentLock();
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly ledger: Ledger) {}

  @Post(':id/pay')
  @HttpCode(200)
  @LockRoute('order:<id>')
  @ApiOperation({ summary: 'Pay an order' })
  async pay(@Param('id') id: string) {
    await gates.pass(id);
    const lock = currentLock();
    return { id, resources: lock?.resources };
  }

  @Post(':id/fail')
  @LockRoute('order:<id>')
  async fail() {
    throw new BadRequestException('rejected by the handler');
  }

  @Post(':id/nested')
  @HttpCode(200)
  @LockRoute('order:<id>')
  @WithLock('order:<id>', { wait: false })
  async nested(@Param('id') id: string) {
    const outer = currentLock();
    const inner = await this.ledger.record(id);
    return { same: outer !== undefined && inner === outer };
  }

  @UseGuards(DenyGuard)
  @Post(':id/denied')
  @LockRoute('order:<id>')
  denied() {
    return 'never';
  }

  @Put('carts')
  @LockRoute('cart:<body.cartId>', { lockedStatus: 423 })
  async cart(@Body() body: { cartId: string }) {
    await gates.pass(body.cartId);
    return { ok: true };
  }

  @Post(':id/queue')
  @HttpCode(200)
  @LockRoute('order:<id>', { wait: 10_000 })
  async queue(@Param('id') id: string) {
    return { id };
  }

  @Get('capped/:id')
  @LockRoute('capped:<id>', { ttl: 300, maxHoldMs: 300 })
  async capped() {
    // Runs past maxHoldMs: the lock is given up and the handler is told through its signal.
    const signal = currentLock()!.signal;
    const reason = await new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    return { lost: (reason as { reason?: string }).reason };
  }

  @Get('stream/:id')
  @LockRoute('stream:<id>')
  stream(): Observable<string> {
    // Emits once and never completes: the lock is held until the client goes away.
    return new Observable<string>((subscriber) => subscriber.next('first'));
  }

  @Get('below/:id')
  @HttpCode(202)
  @WithLock('below:<id>')
  @ApiOperation({ summary: 'Swagger below the lock' })
  async below(@Param('id') id: string) {
    return { id, locked: currentLock()?.resources };
  }

  @Post('fenced/:id')
  @WithLock('fenced:<id>', { fencing: true })
  @UseFilters(RedlockExceptionFilter)
  async fenced(@Param('id') id: string) {
    // The fenced resource saw a newer token: the write is refused, never dropped silently.
    throw new StaleFencingTokenError({ resource: `fenced:${id}`, token: currentLock()!.fencingToken!, currentToken: 10n ** 20n });
  }

  @ApiOperation({ summary: 'Plain locked read' })
  @WithLock('plain:<id>', { wait: false })
  @Get('plain/:id')
  @UseFilters(RedlockExceptionFilter)
  async plain(@Param('id') id: string) {
    await gates.pass(id);
    return { id, locked: currentLock()?.resources };
  }
}

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

describe.each(adapters)('HTTP (%s)', (name, makeAdapter) => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let direct: Redis[];
  let base: string;

  /** On how many nodes the resource is locked. */
  const held = async (resource: string) =>
    (await Promise.all(direct.map((c) => c.exists(lockKey(resource))))).filter((n) => n === 1).length;
  /**
   * Free for the next request: no majority holds it. (A release that timed out on one busy node
   * leaves a key there until its TTL; that does not block anyone.)
   */
  const free = async (resource: string) => (await held(resource)) < 2;

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true, ttl: 5_000 })],
      controllers: [OrdersController],
      providers: [Ledger],
    }).compile();
    const adapter = makeAdapter();
    app = adapter ? moduleRef.createNestApplication(adapter as never) : moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    for (const c of direct ?? []) c.disconnect();
    await cluster?.stop();
  });

  it('serves the locked route and releases the lock before the response', async () => {
    const id = unique(name);
    const res = await request(base).post(`/orders/${id}/pay`).expect(200);
    expect(res.body).toEqual({ id, resources: [`order:${id}`] });
    expect(await free(`order:${id}`)).toBe(true);
  });

  it('answers 409 with Retry-After while another request holds the key', async () => {
    const id = unique(name);
    gates.hold(id);
    const first = request(base)
      .post(`/orders/${id}/pay`)
      .then((r) => r);
    await gates.entered(id);
    const busy = await request(base).post(`/orders/${id}/pay`);
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ statusCode: 409, error: 'Conflict', resources: [`order:${id}`] });
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(busy.headers['retry-after'])).toBeLessThanOrEqual(5);
    gates.open(id);
    expect((await first).status).toBe(200);
    await request(base).post(`/orders/${id}/pay`).expect(200); // free again right after the response
  });

  it('queues a request on a route with wait until the holder responds', async () => {
    const id = unique(name);
    gates.hold(id);
    const first = request(base)
      .post(`/orders/${id}/pay`)
      .then((r) => r);
    await gates.entered(id);
    const queued = request(base)
      .post(`/orders/${id}/queue`)
      .then((r) => r);
    gates.open(id);
    expect((await first).status).toBe(200);
    expect((await queued).status).toBe(200);
  });

  it('stops waiting for the lock when the client of a queued request leaves: it never takes the lock', async () => {
    const id = unique(name);
    const resource = `order:${id}`;
    const redlock = app.get(RedlockService).redlock;
    const seen: string[] = [];
    const off = (['wait', 'acquired', 'failure'] as const).map((event) =>
      redlock.on(event, (e) => {
        if (e.resources.includes(resource)) seen.push(event);
      }),
    );
    try {
      gates.hold(id);
      const first = request(base)
        .post(`/orders/${id}/pay`)
        .then((r) => r);
      await gates.entered(id);
      seen.length = 0; // the holder's own events
      const req = httpRequest(`${base}/orders/${id}/queue`, { method: 'POST' });
      req.on('error', () => undefined);
      req.end();
      await until(() => seen.includes('wait'), 'the queued request waits');
      req.destroy();
      // The guard's wait ends when the client leaves, not when the holder releases.
      await until(() => seen.includes('failure'), 'the queued request stopped waiting');
      gates.open(id);
      expect((await first).status).toBe(200);
      await until(async () => await free(resource), 'the holder released');
      expect(seen).not.toContain('acquired');
    } finally {
      for (const stop of off) stop();
    }
  });

  it('tells the handler through currentLock().signal when its lock is lost', async () => {
    const res = await request(base).get(`/orders/capped/${unique(name)}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ lost: 'max-hold-exceeded' });
  });

  it('answers 423 on a route configured for it, with the key from the body', async () => {
    const cartId = unique('cart');
    gates.hold(cartId);
    const first = request(base)
      .put('/orders/carts')
      .send({ cartId })
      .then((r) => r);
    await gates.entered(cartId);
    const busy = await request(base).put('/orders/carts').send({ cartId });
    expect(busy.status).toBe(423);
    expect(busy.headers['retry-after']).toBeDefined();
    gates.open(cartId);
    expect((await first).status).toBe(200);
  });

  it('answers 400 when the request lacks the key value (nothing locked)', async () => {
    const res = await request(base).put('/orders/carts').send({});
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('<body.cartId>');
  });

  it('releases the lock when the handler throws', async () => {
    const id = unique(name);
    await request(base).post(`/orders/${id}/fail`).expect(400);
    expect(await free(`order:${id}`)).toBe(true);
  });

  it('releases the lock when a later guard rejects the request', async () => {
    const id = unique(name);
    await request(base).post(`/orders/${id}/denied`).expect(403);
    await until(async () => await free(`order:${id}`), 'the denied request released its lock');
  });

  it('is reentrant: @WithLock inside a @LockRoute on the same key does not acquire again', async () => {
    const id = unique(name);
    const res = await request(base).post(`/orders/${id}/nested`).expect(200);
    expect(res.body).toEqual({ same: true });
  });

  it('keeps the lock of an aborted request until its handler finishes', async () => {
    const id = unique(name);
    gates.hold(id);
    const req = httpRequest(`${base}/orders/${id}/pay`, { method: 'POST' });
    req.on('error', () => undefined);
    req.end();
    await gates.entered(id);
    req.destroy();
    // The handler is still running: the key must stay locked (releasing would admit a second request).
    expect((await request(base).post(`/orders/${id}/pay`)).status).toBe(409);
    gates.open(id);
    await until(async () => await free(`order:${id}`), 'the aborted request released its lock');
  });

  it('holds a streamed response lock until the client disconnects', async () => {
    const id = unique(name);
    const req = httpRequest(`${base}/orders/stream/${id}`);
    req.on('error', () => undefined);
    req.end();
    await until(async () => (await held(`stream:${id}`)) >= 2, 'the stream holds its lock');
    expect(
      (
        await request(base)
          .get(`/orders/stream/${id}`)
          .timeout(5_000)
          .catch((e) => e.response)
      ).status,
    ).toBe(409);
    req.destroy();
    await until(async () => await free(`stream:${id}`), 'the disconnected stream released its lock');
  });

  it('serves a @WithLock route and maps its contention to 409 with the exception filter', async () => {
    const id = unique(name);
    gates.hold(id);
    const first = request(base)
      .get(`/orders/plain/${id}`)
      .then((r) => r);
    await gates.entered(id);
    const busy = await request(base).get(`/orders/plain/${id}`);
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBeDefined();
    gates.open(id);
    const ok = await first;
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ id, locked: [`plain:${id}`] });
  });

  it('maps a write refused by a fenced resource to 409 with the exception filter', async () => {
    const id = unique(name);
    const res = await request(base).post(`/orders/fenced/${id}`);
    expect(res.status).toBe(409);
    expect(res.body.resources).toEqual([`fenced:${id}`]);
    expect(await held(`fenced:${id}`)).toBe(0);
  });

  it('serves a @WithLock route whose route decorators sit above it, with its HTTP code', async () => {
    const id = unique(name);
    const res = await request(base).get(`/orders/below/${id}`).expect(202);
    expect(res.body).toEqual({ id, locked: [`below:${id}`] });
  });

  it('answers 503 when a majority of Redis nodes is down', async () => {
    cluster.server(1).pause();
    cluster.server(2).pause();
    try {
      const res = await request(base).post(`/orders/${unique(name)}/pay`);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ statusCode: 503 });
    } finally {
      cluster.server(1).resume();
      cluster.server(2).resume();
    }
    await request(base)
      .post(`/orders/${unique(name)}/pay`)
      .expect(200);
  });

  if (name === 'express') {
    it('keeps Swagger metadata whether @WithLock / @LockRoute sit above or below it', () => {
      const doc = SwaggerModule.createDocument(app, new DocumentBuilder().build());
      expect(doc.paths['/orders/{id}/pay']?.post?.summary).toBe('Pay an order');
      expect(doc.paths['/orders/plain/{id}']?.get?.summary).toBe('Plain locked read');
      expect(doc.paths['/orders/below/{id}']?.get?.summary).toBe('Swagger below the lock');
    });
  }
});
