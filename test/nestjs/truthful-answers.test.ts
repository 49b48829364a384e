/**
 * What a client hears is true (issue 27), on 3 real redis-server processes: a full semaphore
 * says its permits are in use (not that a request is changing the key); `Retry-After` follows the
 * hold times this process saw (holders that finish quickly under a 10 s lease answer 1 s, not 10);
 * a write refused by a fence is its own 409 and is logged; no quorum is 503 saying what to check.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { StaleFencingTokenError, type RedlockEventMap } from '@redlock-nest/core';
import { currentLock, RedlockModule, RedlockService, WithLock, WithSemaphore } from '@redlock-nest/nestjs';
import request from 'supertest';
import { RecentHolds } from '../../packages/nestjs/src/service/recent-holds.js';
import { RedisCluster } from '../harness/redis-server.js';
import { Gate, RecordingLogger, unique, until } from './helpers.js';

const gate = new Gate();

@Injectable()
class Exports {
  @WithSemaphore('export:<tenant>', { permits: 2, wait: false })
  async run(tenant: string) {
    await gate.pass();
    return { tenant };
  }
}

@Controller('answers')
class AnswersController {
  constructor(private readonly exports: Exports) {}

  @Get('export/:tenant')
  export(@Param('tenant') tenant: string) {
    return this.exports.run(tenant);
  }

  @Post('fenced/:id')
  @WithLock('fenced:<id>', { fencing: true })
  async fenced(@Param('id') id: string) {
    throw new StaleFencingTokenError({ resource: `fenced:${id}`, token: currentLock()!.fencingToken!, currentToken: 10n ** 20n });
  }

  @Post('plain/:id')
  @WithLock('plain:<id>', { wait: false })
  async plain(@Param('id') id: string) {
    return { id };
  }
}

/** The rule of docs/nestjs.md, recomputed from the `release` events: the moving average of `heldMs`. */
function averageOf(helds: readonly number[]): number {
  return helds.slice(1).reduce((average, held) => average + 0.3 * (held - average), helds[0]!);
}

describe('truthful HTTP answers', () => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let server: Parameters<typeof request>[0];
  const logger = new RecordingLogger();
  const releases: Array<RedlockEventMap['release']> = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, ttl: 10_000 })],
      controllers: [AnswersController],
      providers: [Exports],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
    server = app.getHttpServer() as Parameters<typeof request>[0];
    app.get(RedlockService).redlock.on('release', (e) => void releases.push(e));
  });

  afterAll(async () => {
    gate.release();
    await app?.close();
    await cluster?.stop();
  });

  /** Fills both permits of `tenant`, asks a third time, then lets the two finish. */
  async function contended(tenant: string): Promise<request.Response> {
    const resource = `export:${tenant}`;
    const seen = releases.filter((e) => e.resources[0] === resource).length;
    const running = [request(server).get(`/answers/export/${tenant}`), request(server).get(`/answers/export/${tenant}`)].map((r) =>
      r.then((res) => res),
    );
    await until(() => gate.inside === 2, 'both permits are in use');
    const busy = await request(server).get(`/answers/export/${tenant}`);
    gate.release();
    for (const done of await Promise.all(running)) expect(done.status).toBe(200);
    await until(() => releases.filter((e) => e.resources[0] === resource).length === seen + 2, 'both holds were released');
    return busy;
  }

  it('says that all permits of a full semaphore are in use, and Retry-After follows the holds seen, not the 10 s lease', async () => {
    const tenant = unique('acme');
    const resource = `export:${tenant}`;
    // No hold of this semaphore seen yet: the holders' remaining lease, as the nodes report it (10 s TTL).
    const first = await contended(tenant);
    expect(first.status).toBe(409);
    expect(first.body).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      message: expect.stringMatching(new RegExp(`^all 2 permits of ${resource} are in use; retry in \\d+ s\\.$`)),
      resources: [resource],
      permits: 2,
    });
    expect(first.body.message).not.toMatch(/being changed/);
    const firstSeconds = Number(first.headers['retry-after']);
    expect(firstSeconds).toBeGreaterThanOrEqual(1);
    expect(firstSeconds).toBeLessThanOrEqual(10);
    expect(first.body.retryAfterSeconds).toBe(firstSeconds);

    // A few more holds that end as soon as the gate opens: far shorter than the lease.
    await contended(tenant);
    const busy = await contended(tenant);
    const helds = releases.filter((e) => e.resources[0] === resource).map((e) => e.heldMs);
    expect(helds).toHaveLength(6);
    // The answer came after the first 4 holds: their average, rounded up to whole seconds, at least 1.
    const expected = Math.max(1, Math.ceil(averageOf(helds.slice(0, 4)) / 1000));
    expect(busy.status).toBe(409);
    expect(Number(busy.headers['retry-after'])).toBe(expected);
    expect(expected).toBeLessThanOrEqual(2);
    expect(busy.body.message).toBe(`all 2 permits of ${resource} are in use; retry in ${expected} s.`);
  });

  it('remembers the hold times of the last 1,000 resources released, and takes the longest for several', () => {
    const holds = new RecentHolds();
    for (let i = 0; i <= 1_000; i++) holds.note([`r:${i}`], i);
    expect(holds.typicalMs(['r:0'])).toBeUndefined(); // the oldest was forgotten
    expect(holds.typicalMs(['r:1'])).toBe(1);
    holds.note(['r:1'], 11); // moves 30 % of the way
    expect(holds.typicalMs(['r:1'])).toBe(4);
    expect(holds.typicalMs(['r:1', 'r:500'])).toBe(500);
    expect(holds.typicalMs(['r:1', 'never'])).toBeUndefined();
  });

  it('answers a write refused by a fence with 409 Stale Fencing Token, saying why, and logs a warning', async () => {
    const id = unique('stale');
    const res = await request(server).post(`/answers/fenced/${id}`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      statusCode: 409,
      error: 'Stale Fencing Token',
      resources: [`fenced:${id}`],
      message: expect.stringContaining('a newer lock holder wrote first'),
    });
    await logger.logged(`the write to fenced:${id} with token`);
    const line = logger.lines.find((l) => l.message.includes(`fenced:${id}`))!;
    expect(line.level).toBe('warn');
    expect(line.message).toContain(`(the resource has seen ${10n ** 20n})`);
  });

  it('answers 503 without a quorum, saying what to check, with a 1 s Retry-After when no restart window is known', async () => {
    await Promise.all([cluster.server(1).kill(), cluster.server(2).kill()]);
    const res = await request(server).post(`/answers/plain/${unique('down')}`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable', retryAfterSeconds: 1 });
    expect(res.body.message).toContain(
      "Check that a majority of the lock's nodes (Redis, or etcd members) are up and reachable; retry in 1 s.",
    );
  });
});
