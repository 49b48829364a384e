/**
 * A route whose lock nodes restarted without their data: the restart rule keeps them out of
 * quorums for a known window, and the route answers 503 with `Retry-After` saying when a quorum
 * counts again (not a bare 503 a client would retry at once), while the request was not run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, HttpCode, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockRoute, RedlockModule, RedlockService } from '@redlock-nest/nestjs';
import type { Redlock } from '@redlock-nest/core';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { reachable } from '../harness/test-utils.js';
import { unique } from './helpers.js';

const ran: string[] = [];

@Controller('jobs')
class JobsController {
  @Post(':id/run')
  @HttpCode(200)
  @LockRoute('job:<id>', { wait: 2_000 })
  run(@Param('id') id: string) {
    ran.push(id);
    return { id };
  }
}

describe('a route during the restart window of its nodes', () => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    cluster = await RedisCluster.start(1);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, ttl: 30_000 })],
      controllers: [JobsController],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app.close();
    await cluster.stop();
  });

  it('answers 503 with Retry-After for the rest of the window, and does not run the handler', async () => {
    // A first request uses the module's TTL: that TTL is the window a restart opens.
    await request(base)
      .post(`/jobs/${unique('before')}/run`)
      .expect(200);
    await cluster.server(0).kill();
    cluster.server(0).wipe();
    await cluster.server(0).restart();
    await reachable(app.get(RedlockService).redlock as Redlock, 0);

    const id = unique('during');
    const res = await request(base).post(`/jobs/${id}/run`);
    expect(res.status).toBe(503);
    const seconds = Number(res.headers['retry-after']);
    // The window is the 30 s TTL minus the time since the restart; the route's 2 s wait ends inside it.
    expect(seconds).toBeGreaterThan(2);
    expect(seconds).toBeLessThanOrEqual(30);
    expect(res.body).toMatchObject({ statusCode: 503, retryAfterSeconds: seconds });
    expect(ran).not.toContain(id);
  });
});
