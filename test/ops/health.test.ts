/**
 * RedlockHealthIndicator through a real terminus health check over spawned redis-servers:
 * up with every node, degraded with one node gone, down (503) without a quorum; plus the
 * module's logging: one line per unreachable node, never the password.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Inject, Module, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RedlockModule } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, RedlockHealthModule } from '@redlock-nest/nestjs/health';
import { RedisCluster } from '../harness/redis-server.js';
import { RecordingLogger } from '../nestjs/helpers.js';

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(RedlockHealthIndicator) private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlock.isHealthy('redlock', { timeoutMs: 300 })]);
  }
}

@Module({ imports: [RedlockHealthModule], controllers: [HealthController] })
class HealthModule {}

describe('RedlockHealthIndicator', () => {
  const password = 'hunter2-secret';
  let cluster: RedisCluster;
  let app: INestApplication;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    cluster = await RedisCluster.start(3, { args: ['--requirepass', password] });
    const nodes = cluster.servers.map((s) => `redis://:${password}@127.0.0.1:${s.port}`);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes, isGlobal: true, independenceCheck: 'off' }), HealthModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
  });
  afterAll(async () => {
    for (const server of cluster.servers) server.resume();
    await app.close();
    await cluster.stop();
  });

  it('reports every node up with latency and role, and the quorum', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.status).toBe('ok');
    const info = res.body.info.redlock;
    expect(info).toMatchObject({ status: 'up', quorum: 2, reachable: 3 });
    expect(info.nodes).toHaveLength(3);
    for (const node of info.nodes) {
      expect(node).toMatchObject({ status: 'up', role: 'master' });
      expect(typeof node.latencyMs).toBe('number');
      expect(node.node).toMatch(/^127\.0\.0\.1:\d+$/);
    }
  });

  it('is degraded (still 200) with one node killed, and logs that node once', async () => {
    await cluster.server(2).kill();
    const first = await request(app.getHttpServer()).get('/health').expect(200);
    const second = await request(app.getHttpServer()).get('/health').expect(200);
    for (const res of [first, second]) {
      expect(res.body.status).toBe('degraded');
      expect(res.body.details.redlock).toMatchObject({ status: 'degraded', reachable: 2 });
      expect(res.body.details.redlock.nodes[2]).toMatchObject({ status: 'down' });
    }
    const port = String(cluster.server(2).port);
    await logger.logged(`:${port}`); // the client's reconnect fails asynchronously
    const third = await request(app.getHttpServer()).get('/health').expect(200);
    const lines = logger.lines.filter((l) => l.message.includes(`:${port}`));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe('warn');
    // The real cause, not ioredis' "Stream isn't writeable and enableOfflineQueue options is false".
    // (ECONNRESET when the kill reset a connection with a command in flight: a real cause too.)
    expect(lines[0]!.message).toMatch(new RegExp(`\\((ECONNREFUSED|ECONNRESET) 127\\.0\\.0\\.1:${port}\\)`));
    expect(third.body.details.redlock.nodes[2]).toEqual({
      node: `127.0.0.1:${port}`,
      status: 'down',
      error: expect.stringMatching(new RegExp(`^(ECONNREFUSED|ECONNRESET) 127\\.0\\.0\\.1:${port}$`)),
    });
    for (const res of [first, second])
      expect(res.body.details.redlock.nodes[2].error).not.toMatch(/Stream isn't writeable|Connection is closed/);
  });

  it('is down (503) without a quorum: a paused node times out', async () => {
    cluster.server(1).pause();
    const res = await request(app.getHttpServer()).get('/health').expect(503);
    const details = res.body.details.redlock;
    expect(details).toMatchObject({ status: 'down', quorum: 2, reachable: 1 });
    expect(details.nodes[1]).toMatchObject({ status: 'down', error: 'no answer within 300 ms' });
    expect(JSON.stringify(res.body)).not.toContain(password);
    expect(JSON.stringify(logger.lines)).not.toContain(password);
  });
});
