/**
 * `{ fair: true }` on `@WithLock` and `@LockRoute`: callers get the lock in order of
 * arrival (the queue lives on the nodes; see test/core/fair-lock.test.ts for the core).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redlock, RedlockArgumentError } from '@redlock-nest/core';
import { LockRoute, RedlockModule, WithLock } from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { directClient, unique, until } from './helpers.js';

@Injectable()
class Jobs {
  readonly order: string[] = [];

  @WithLock('job:<id>', { fair: true, wait: 10_000 })
  async run(id: string, who: string) {
    this.order.push(who);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

@Controller('jobs')
class JobsController {
  constructor(private readonly jobs: Jobs) {}

  @Post(':id/:who')
  @LockRoute('job:<id>', { fair: true, wait: 10_000 })
  run(@Param('who') who: string) {
    this.jobs.order.push(who);
    return { who };
  }
}

describe('fair @WithLock and @LockRoute', () => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let jobs: Jobs;
  let direct: Redis[];
  let outside: Redlock;

  /** Waits until `count` callers are queued for `resource` on every node. */
  function queued(resource: string, count: number): Promise<void> {
    return until(
      async () => (await Promise.all(direct.map((c) => c.zcard(`redlock:fair-queue:${resource}`)))).every((n) => n === count),
      `${count} queued`,
    );
  }

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true, ttl: 5_000 })],
      controllers: [JobsController],
      providers: [Jobs],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    jobs = app.get(Jobs);
    // Another instance of the service, as far as the queue can tell.
    outside = new Redlock(cluster.urls, { onWarning: () => undefined });
  });

  afterAll(async () => {
    await outside.close();
    await app.close();
    for (const c of direct) c.disconnect();
    await cluster.stop();
  });

  it('@WithLock callers run in order of arrival', async () => {
    const id = unique('with-lock');
    jobs.order.length = 0;
    const held = await outside.acquire(`job:${id}`, 10_000, { fair: true });
    const calls: Array<Promise<void>> = [];
    for (const [i, who] of ['a', 'b', 'c'].entries()) {
      calls.push(jobs.run(id, who));
      await queued(`job:${id}`, i + 1);
    }
    await held.release();
    await Promise.all(calls);
    expect(jobs.order).toEqual(['a', 'b', 'c']);
  });

  it('@LockRoute requests are served in order of arrival', async () => {
    const id = unique('route');
    jobs.order.length = 0;
    const held = await outside.acquire(`job:${id}`, 10_000, { fair: true });
    const server = app.getHttpServer() as Parameters<typeof request>[0];
    const calls: Array<Promise<unknown>> = [];
    for (const [i, who] of ['x', 'y', 'z'].entries()) {
      calls.push(
        request(server)
          .post(`/jobs/${id}/${who}`)
          .then((res) => expect(res.status).toBe(201)),
      );
      await queued(`job:${id}`, i + 1);
    }
    await held.release();
    await Promise.all(calls);
    expect(jobs.order).toEqual(['x', 'y', 'z']);
  });

  it('refuses a non-boolean fair when the class loads', () => {
    const decorate = (): void => {
      class Bad {
        @WithLock('k', { fair: 'yes' as unknown as boolean })
        async run(): Promise<void> {}
      }
      void Bad;
    };
    expect(decorate).toThrow(RedlockArgumentError);
    expect(decorate).toThrow('fair must be a boolean');
  });
});
