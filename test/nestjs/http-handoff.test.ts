/**
 * The hand-off of a route's lock from `RedlockGuard` to `RedlockInterceptor`: a handler never
 * runs on a hold that was released (its client left while a later guard ran) or lost (it
 * expired before the handler started). Each handler run is recorded as an interval per key,
 * and no two intervals of one key may overlap.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Catch,
  Controller,
  Headers,
  HttpCode,
  Injectable,
  Param,
  Post,
  UseFilters,
  UseGuards,
  type ArgumentsHost,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockRoute, RedlockGuard, RedlockModule, WithSemaphore } from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import { request as httpRequest, type ClientRequest } from 'node:http';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { deferred, directClient, IntervalLog, lockKey, unique, until, type Deferred } from './helpers.js';

/** Named checkpoints a test awaits (`reached`) and opens (`open`) one request at a time. */
class Checkpoints {
  private readonly reachedAt = new Map<string, Deferred>();
  private readonly gates = new Map<string, Deferred>();
  private get(map: Map<string, Deferred>, name: string): Deferred {
    let d = map.get(name);
    if (!d) map.set(name, (d = deferred()));
    return d;
  }
  reached(name: string): Promise<void> {
    return this.get(this.reachedAt, name).promise;
  }
  open(name: string): void {
    this.get(this.gates, name).resolve();
  }
  /** Called by the app: announces `name` and waits until the test opens it. */
  async pass(name: string): Promise<void> {
    this.get(this.reachedAt, name).resolve();
    await this.get(this.gates, name).promise;
  }
}

const points = new Checkpoints();
const runs = new IntervalLog();
/** What ended each request that did not reach its handler, by the `x-req` label. */
const refusals = new Map<string, Deferred<unknown>>();
const refusal = (label: string) => {
  if (!refusals.has(label)) refusals.set(label, deferred<unknown>());
  return refusals.get(label)!;
};

const label = (context: ExecutionContext | ArgumentsHost) =>
  String(context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-req']);

/** A guard after RedlockGuard that, for requests asking for it, waits until the test lets it pass. */
@Injectable()
class LaterGuard implements CanActivate {
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string> }>();
    if (req.headers['x-later-guard']) await points.pass(`guard:${label(context)}`);
    return true;
  }
}

/** Records how each request that never reached its handler ended, then answers as Nest would. */
@Catch()
class RecordingFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    refusal(label(host)).resolve(exception);
    super.catch(exception, host);
  }
}

@Controller('handoff')
@UseFilters(RecordingFilter)
class HandoffController {
  @UseGuards(LaterGuard)
  @Post(':id')
  @HttpCode(200)
  @LockRoute('handoff:<id>')
  async run(@Param('id') id: string, @Headers('x-req') req: string) {
    const end = runs.begin(`handoff:${id}`, req);
    await points.pass(`handler:${req}`);
    end();
    return { ok: true };
  }

  @UseGuards(LaterGuard)
  @Post('read/:id')
  @HttpCode(200)
  @LockRoute('read:<id>', { mode: 'read' })
  async read(@Param('id') id: string, @Headers('x-req') req: string) {
    const end = runs.begin(`read:${id}`, req);
    await points.pass(`handler:${req}`);
    end();
    return { ok: true };
  }

  @UseGuards(LaterGuard)
  @Post('permit/:id')
  @HttpCode(200)
  // A semaphore is @WithSemaphore's (not @LockRoute's): RedlockGuard acquires its permit before the later guard.
  @UseGuards(RedlockGuard)
  @WithSemaphore('permit:<id>', { permits: 1 })
  async permit(@Param('id') id: string, @Headers('x-req') req: string) {
    const end = runs.begin(`permit:${id}`, req);
    await points.pass(`handler:${req}`);
    end();
    return { ok: true };
  }

  @UseGuards(LaterGuard)
  @Post('fair/:id')
  @HttpCode(200)
  @LockRoute('fair:<id>', { fair: true })
  async fair(@Param('id') id: string, @Headers('x-req') req: string) {
    const end = runs.begin(`fair:${id}`, req);
    await points.pass(`handler:${req}`);
    end();
    return { ok: true };
  }

  @UseGuards(LaterGuard)
  @Post('capped/:id')
  @HttpCode(200)
  @LockRoute('capped:<id>', { ttl: 300, maxHoldMs: 300 })
  async capped(@Param('id') id: string, @Headers('x-req') req: string) {
    const end = runs.begin(`capped:${id}`, req);
    await points.pass(`handler:${req}`);
    end();
    return { ok: true };
  }
}

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

describe.each(adapters)('route lock hand-off (%s)', (name, makeAdapter) => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let direct: Redis[];
  let base: string;

  /** On how many nodes `key` exists. */
  const heldKey = async (key: string) => (await Promise.all(direct.map((c) => c.exists(key)))).filter((n) => n === 1).length;
  const held = (resource: string) => heldKey(lockKey(resource));

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, ttl: 5_000 })],
      controllers: [HandoffController],
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

  /** Sends a request that waits in LaterGuard, without waiting for its answer. */
  const sendWaiting = (path: string, req: string): ClientRequest => {
    const client = httpRequest(`${base}${path}`, { method: 'POST', headers: { 'x-req': req, 'x-later-guard': '1' } });
    client.on('error', () => undefined);
    client.end();
    return client;
  };

  // [what, route path prefix, resource prefix, the Redis key of a hold on the resource]
  const primitives: Array<[string, string, string, (resource: string) => string]> = [
    ['a lock', '/handoff', 'handoff', lockKey],
    ["a read lock ({ mode: 'read' })", '/handoff/read', 'read', lockKey], // readers mark the lock key
    ['a semaphore permit (@WithSemaphore, { permits: 1 })', '/handoff/permit', 'permit', (r) => `redlock:semaphore:${r}:0`],
    ['a fair lock ({ fair: true })', '/handoff/fair', 'fair', lockKey],
  ];

  it.each(primitives)(
    'never runs the handler of a request whose client left before it started (%s), while another request holds it',
    async (_what, path, prefix, keyOf) => {
      const id = unique(name);
      const [a, b] = [`${id}-a`, `${id}-b`];
      const resource = `${prefix}:${id}`;
      const clientA = sendWaiting(`${path}/${id}`, a);
      await points.reached(`guard:${a}`); // A holds the lock and waits in the later guard
      expect(await heldKey(keyOf(resource))).toBeGreaterThanOrEqual(2);
      clientA.destroy(); // A's client leaves: its unclaimed hold is released
      await until(async () => (await heldKey(keyOf(resource))) < 2, "A's hold was released when its client left");

      const answerB = request(base)
        .post(`${path}/${id}`)
        .set('x-req', b)
        .then((r) => r);
      await points.reached(`handler:${b}`); // B holds the key and is inside its handler
      points.open(`guard:${a}`); // A's later guard passes now
      const aRan = points.reached(`handler:${a}`).then(() => 'ran' as const);
      const aRefused = refusal(a).promise.then(() => 'refused' as const);
      const outcome = await Promise.race([aRan, aRefused]);
      points.open(`handler:${b}`);
      points.open(`handler:${a}`);
      expect((await answerB).status).toBe(200);

      expect(runs.overlaps(resource)).toEqual([]);
      expect(outcome).toBe('refused');
      expect(runs.labels(resource)).toEqual([b]);
    },
  );

  it('never runs the handler on a hold that expired before it started; the client gets 409', async () => {
    const id = unique(name);
    const [a, b] = [`${id}-a`, `${id}-b`];
    const answerA = new Promise<number>((resolve) => {
      const client = httpRequest(`${base}/handoff/capped/${id}`, { method: 'POST', headers: { 'x-req': a, 'x-later-guard': '1' } });
      client.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      client.end();
    });
    await points.reached(`guard:${a}`);
    // A's hold passes its maxHoldMs while a later guard still runs: the key expires.
    await until(async () => (await held(`capped:${id}`)) < 2, "A's hold expired");

    const answerB = request(base)
      .post(`/handoff/capped/${id}`)
      .set('x-req', b)
      .then((r) => r);
    await points.reached(`handler:${b}`);
    points.open(`guard:${a}`);
    const aRan = points.reached(`handler:${a}`).then(() => 'ran' as const);
    const aRefused = refusal(a).promise.then(() => 'refused' as const);
    const outcome = await Promise.race([aRan, aRefused]);
    points.open(`handler:${b}`);
    points.open(`handler:${a}`);
    expect((await answerB).status).toBe(200);

    expect(runs.overlaps(`capped:${id}`)).toEqual([]);
    expect(outcome).toBe('refused');
    expect(await answerA).toBe(409);
    expect(runs.labels(`capped:${id}`)).toEqual([b]);
  });
});
