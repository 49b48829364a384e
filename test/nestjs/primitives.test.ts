/**
 * Read-write locks and semaphores in the Nest layer, on 3 real redis-server processes:
 * `@WithLock(key, { mode })`, `@WithSemaphore(key, { permits })`, `@LockRoute` with a mode,
 * reentrancy by primitive, the HTTP mapping (409 + Retry-After) for a full semaphore, and a burst
 * of semaphore calls that is contention, not an outage.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockNotAcquiredError, primitiveOf, QuorumUnavailableError, RedlockArgumentError } from '@redlock-nest/core';
import { currentLock, LockRoute, RedlockModule, WithLock, WithSemaphore } from '@redlock-nest/nestjs';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { Gate, rejection, unique, until } from './helpers.js';

const gate = new Gate();

@Injectable()
class Config {
  @WithLock('config:<id>', { mode: 'read', wait: 5_000 })
  async read(id: string) {
    await gate.pass();
    return primitiveOf(currentLock()!);
  }

  @WithLock('config:<id>', { mode: 'write', wait: false })
  async write(id: string) {
    return primitiveOf(currentLock()!);
  }

  @WithLock('config:<id>', { mode: 'read' })
  async readThenWrite(id: string) {
    return this.write(id);
  }

  @WithLock('config:<id>', { mode: 'write' })
  async writeThenRead(id: string) {
    // A write lock covers reads: the nested read reuses it (no second acquisition).
    const outer = currentLock();
    return (await this.readQuick(id)) === outer;
  }

  @WithLock('config:<id>', { mode: 'read', wait: false })
  async readQuick(id: string) {
    return currentLock();
  }

  @WithSemaphore('export:<tenantId>', { permits: 2, wait: false })
  async export(tenantId: string) {
    await gate.pass();
    return primitiveOf(currentLock()!);
  }

  @WithSemaphore('burst:<tenantId>', { permits: 5, wait: false })
  async burst(tenantId: string) {
    await new Promise((r) => setImmediate(r));
    return tenantId;
  }
}

@Controller('primitives')
class PrimitivesController {
  @Get('config/:id')
  @LockRoute('config:<id>', { mode: 'read' })
  async config(@Param('id') id: string) {
    return { primitive: primitiveOf(currentLock()!) };
  }

  @Get('export/:tenantId')
  @WithSemaphore('export:<tenantId>', { permits: 1, wait: false })
  async export(@Param('tenantId') tenantId: string) {
    await gate.pass();
    return { primitive: primitiveOf(currentLock()!) };
  }
}

describe('read-write locks and semaphores in Nest', () => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let config: Config;

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true, ttl: 5_000 })],
      controllers: [PrimitivesController],
      providers: [Config],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    config = app.get(Config);
  });

  afterAll(async () => {
    gate.release();
    await app?.close();
    await cluster?.stop();
  });

  it('lets @WithLock readers in together and keeps a writer out meanwhile', async () => {
    const id = unique('cfg');
    const readers = [config.read(id), config.read(id)];
    await until(() => gate.inside === 2, 'both readers are inside');
    expect(await rejection(config.write(id))).toBeInstanceOf(LockNotAcquiredError);
    gate.release();
    expect(await Promise.all(readers)).toEqual(['read', 'read']);
    expect(await config.write(id)).toBe('write');
  });

  it('refuses to upgrade a read lock in the same call chain, and reuses a write lock for a read', async () => {
    const id = unique('cfg');
    const err = await rejection(config.readThenWrite(id));
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(String(err.message)).toMatch(/cannot be upgraded/);
    expect(await config.writeThenRead(id)).toBe(true);
  });

  it('lets @WithSemaphore run `permits` calls at once and refuses the next', async () => {
    const tenant = unique('tenant');
    const running = [config.export(tenant), config.export(tenant)];
    await until(() => gate.inside === 2, 'two exports run');
    expect(await rejection(config.export(tenant))).toBeInstanceOf(LockNotAcquiredError);
    // A lock of the same name is not a permit.
    expect(await config.write(tenant)).toBe('write');
    gate.release();
    expect(await Promise.all(running)).toEqual(['semaphore', 'semaphore']);
  });

  it('maps a burst of 10,000 @WithSemaphore calls (wait: false) to contention, never to an outage', async () => {
    const tenant = unique('burst');
    // The 10,000 calls' synchronous part alone can outlast the clients' own command timeout.
    const results = await Promise.allSettled(Array.from({ length: 10_000 }, () => config.burst(tenant)));
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    // LockNotAcquiredError is what a route answers with 409 + Retry-After (see the next test); never a 503's error.
    const outages = errors.filter((e) => !(e instanceof LockNotAcquiredError));
    // On failure, say what the nodes answered (the first few).
    expect(outages.slice(0, 3).map((e) => (e instanceof QuorumUnavailableError ? e.nodes : e))).toEqual([]);
    expect([...new Set(errors.map((e) => (e as Error).name))]).toEqual(['LockNotAcquiredError']);
    expect(errors.every((e) => e instanceof LockNotAcquiredError)).toBe(true);
    expect(results.length - errors.length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('takes a read lock for @LockRoute with a mode, and answers 409 with Retry-After for a full semaphore', async () => {
    const server = app.getHttpServer() as Parameters<typeof request>[0];
    expect(
      (
        await request(server)
          .get(`/primitives/config/${unique('c')}`)
          .expect(200)
      ).body,
    ).toEqual({ primitive: 'read' });
    const tenant = unique('t');
    const first = request(server)
      .get(`/primitives/export/${tenant}`)
      .then((r) => r);
    await until(() => gate.inside === 1, 'the first export runs');
    const busy = await request(server).get(`/primitives/export/${tenant}`);
    expect(busy.status).toBe(409);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    gate.release();
    expect((await first).body).toEqual({ primitive: 'semaphore' });
  });

  it('refuses a semaphore without permits, and bad modes, naming the fix', () => {
    expect(() => WithSemaphore('x', {} as { permits: number })).toThrow(/needs the number of permits/);
    expect(() => WithSemaphore('x', { permits: 0 })(Config.prototype, 'read', { value: async () => undefined })).toThrow(
      RedlockArgumentError,
    );
    expect(() => WithLock('x', { mode: 'shared' as 'read' })(Config.prototype, 'read', { value: async () => undefined })).toThrow(
      /mode must be 'read' or 'write'/,
    );
  });

  it('refuses permits on @WithLock and @LockRoute (JavaScript callers) when the class is defined, naming @WithSemaphore', () => {
    const method = { value: async () => undefined };
    const options = { permits: 2 } as Record<string, unknown>;
    for (const decorate of [
      () => WithLock('export:<id>', options)(Config.prototype, 'read', method),
      () => LockRoute('export:<id>', options)(Config.prototype, 'read', method),
    ]) {
      let thrown: unknown;
      try {
        decorate();
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(RedlockArgumentError);
      expect(String((thrown as Error).message)).toMatch(
        /permits is an option of @WithSemaphore only; use @WithSemaphore\(key, \{ permits: 2 \}\)/,
      );
    }
  });
});
