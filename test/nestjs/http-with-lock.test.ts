/**
 * `@WithLock` on controller handlers speaks HTTP: the guard resolves its key from the request
 * and acquires before the pipes, the method reuses that lock, and lock failures answer
 * 409 + Retry-After or 503 (never 500) with no filter to add. Both decorator orders, Express and
 * Fastify, three setups: `http: { global: true }`, explicit `@UseGuards(RedlockGuard)` +
 * `@UseInterceptors(RedlockInterceptor)`, and `@WithLock` alone.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Controller,
  HttpCode,
  Injectable,
  Param,
  Post,
  UseGuards,
  UseInterceptors,
  type INestApplication,
  type PipeTransform,
  type Type,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { currentLock, RedlockGuard, RedlockInterceptor, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { RedlockArgumentError } from '@redlock-nest/core';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, unique, type Deferred } from './helpers.js';

let direct: Redis[] = [];
const held = async (resource: string) => (await Promise.all(direct.map((c) => c.exists(lockKey(resource))))).filter((n) => n === 1).length;

/** Whether `order:<id>` was locked (a live lock in the request's lock context) when the pipes ran, by id. */
const lockedAtPipe = new Map<string, boolean>();
@Injectable()
class ProbePipe implements PipeTransform<string, string> {
  transform(id: string): string {
    lockedAtPipe.set(id, (currentLock(`order:${id}`)?.remainingMs ?? 0) > 0);
    return id;
  }
}

const gates = new Map<string, { entered: Deferred; open: Deferred }>();
const gate = (id: string) => {
  if (!gates.has(id)) gates.set(id, { entered: deferred(), open: deferred() });
  return gates.get(id)!;
};
async function critical(id: string) {
  const g = gate(id);
  g.entered.resolve();
  await g.open.promise;
  return { id, locked: currentLock()?.resources ?? null };
}

/** `@WithLock` above and below `@Post`, with nothing else. */
@Controller('bare')
class BareController {
  @WithLock('order:<id>', { wait: false })
  @Post(':id/above')
  @HttpCode(200)
  above(@Param('id', ProbePipe) id: string) {
    return critical(id);
  }

  @Post(':id/below')
  @HttpCode(200)
  @WithLock('order:<id>', { wait: false })
  below(@Param('id', ProbePipe) id: string) {
    return critical(id);
  }

  @Post(':id/skip')
  @HttpCode(200)
  @WithLock('order:<id>', { onLocked: 'skip' })
  skip(@Param('id') id: string) {
    return critical(id);
  }
}

/** The same routes (inherited), with the guard and interceptor applied explicitly. */
@Controller('guarded')
@UseGuards(RedlockGuard)
@UseInterceptors(RedlockInterceptor)
class GuardedController extends BareController {}

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

const setups: ReadonlyArray<readonly [string, boolean, Type<unknown>, boolean]> = [
  // name, http.global, controller, acquired before the pipes
  ['http.global', true, BareController, true],
  ['explicit guard', false, GuardedController, true],
  ['@WithLock alone', false, BareController, false],
];

describe.each(adapters)('@WithLock on routes (%s)', (name, makeAdapter) => {
  let cluster: RedisCluster;

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
  });

  afterAll(async () => {
    for (const c of direct) c.disconnect();
    await cluster?.stop();
  });

  it('refuses a malformed http option with a typed error naming the fix', async () => {
    const compiling = Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, http: { global: 'yes' } as never })],
    }).compile();
    await expect(compiling).rejects.toThrow(RedlockArgumentError);
    await expect(compiling).rejects.toThrow('{ global: true }');
  });

  describe.each(setups)('%s', (_setup, global, controller, beforePipes) => {
    let app: INestApplication;
    let base: string;
    let acquisitions: string[];

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: cluster.urls, ttl: 5_000, http: { global } })],
        controllers: [controller],
      }).compile();
      const adapter = makeAdapter();
      app = adapter ? moduleRef.createNestApplication(adapter as never) : moduleRef.createNestApplication();
      await app.listen(0, '127.0.0.1');
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      acquisitions = [];
      app.get(RedlockService).redlock.on('acquired', (e) => acquisitions.push(...e.resources));
    });

    afterAll(async () => {
      await app?.close();
    });

    const prefix = controller === BareController ? 'bare' : 'guarded';

    it("skips the handler of a contended onLocked: 'skip' route (200, empty body)", async () => {
      const id = unique(`${name}-skip`);
      const first = request(base)
        .post(`/${prefix}/${id}/skip`)
        .then((r) => r);
      await gate(id).entered.promise;
      const skipped = await request(base).post(`/${prefix}/${id}/skip`);
      gate(id).open.resolve();
      expect(skipped.status).toBe(200);
      expect(skipped.text).toBe('');
      expect((await first).body).toEqual({ id, locked: [`order:${id}`] });
    });

    describe.each(['above', 'below'])('@WithLock %s @Post', (order) => {
      it('locks once for the request, and answers 409 with Retry-After while another request holds the key', async () => {
        const id = unique(`${name}-${order}`);
        const first = request(base)
          .post(`/${prefix}/${id}/${order}`)
          .then((r) => r);
        await gate(id).entered.promise;
        const busy = await request(base).post(`/${prefix}/${id}/${order}`);
        gate(id).open.resolve();
        const ok = await first;

        expect(busy.status).toBe(409);
        expect(busy.body).toMatchObject({ statusCode: 409, resources: [`order:${id}`] });
        expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(ok.status).toBe(200);
        expect(ok.body).toEqual({ id, locked: [`order:${id}`] });
        // One acquisition for the first request: the method reused the guard's lock.
        expect(acquisitions.filter((r) => r === `order:${id}`)).toHaveLength(1);
        expect(lockedAtPipe.get(id)).toBe(beforePipes);
        expect(await held(`order:${id}`)).toBe(0);
      });

      it('answers 503 when 2 of 3 nodes are down', async () => {
        cluster.server(1).pause();
        cluster.server(2).pause();
        try {
          const res = await request(base).post(`/${prefix}/${unique(name)}/${order}`);
          expect(res.status).toBe(503);
          expect(res.body).toMatchObject({ statusCode: 503 });
        } finally {
          cluster.server(1).resume();
          cluster.server(2).resume();
        }
      });
    });
  });
});
