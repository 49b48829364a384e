/**
 * The NestJS layer on EtcdLocks over a real 3-member etcd cluster: `@LockRoute` answers 409 with
 * Retry-After while another process's lock holds the key, and 503 when the majority is down; the
 * terminus health indicator reports every member (leader or follower, raft index, version), the
 * leader they agree on, and `down` (503) without a majority.
 */
import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, HttpCode, Inject, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { EtcdLocks } from '@redlock-nest/etcd';
import { currentLock, LockRoute, RedlockModule } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, RedlockHealthModule } from '@redlock-nest/nestjs/health';
import request from 'supertest';
import { EtcdCluster, uniqueResource, until } from './helpers.js';

@Controller('orders')
class OrdersController {
  @Post(':id/pay')
  @HttpCode(200)
  @LockRoute('order:<id>')
  pay(@Param('id') id: string) {
    return { id, token: String(currentLock()?.fencingToken) };
  }
}

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(RedlockHealthIndicator) private readonly locks: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks', { timeoutMs: 500 })]);
  }
}

@Module({ imports: [RedlockHealthModule], controllers: [HealthController] })
class HealthModule {}

let cluster: EtcdCluster;
let app: INestApplication;
/** A second engine: another process's view, holding locks behind the app's back. */
let other: EtcdLocks;

const hostOf = (url: string): string => new URL(url).host;

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
  other = new EtcdLocks({ hosts: cluster.hosts, requestTimeoutMs: 400 });
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ isGlobal: true, engine: new EtcdLocks({ hosts: cluster.hosts, requestTimeoutMs: 400 }) }),
      HealthModule,
    ],
    controllers: [OrdersController],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
});

afterEach(async () => {
  await Promise.all(cluster.members.filter((m) => m.state === 'killed').map((m) => m.start('existing')));
});

afterAll(async () => {
  await app?.close();
  await other?.close();
  await cluster?.stop();
});

describe('NestJS on etcd', () => {
  it('@LockRoute locks through etcd: a fencing token per request, the key free afterwards', async () => {
    const id = uniqueResource('pay');
    const first = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    const second = await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
    expect(BigInt(second.body.token)).toBeGreaterThan(BigInt(first.body.token));
  });

  it('@LockRoute answers 409 with Retry-After while another process holds the key', async () => {
    const id = uniqueResource('held');
    const held = await other.acquire(`order:${id}`, 4_000);
    try {
      const busy = await request(app.getHttpServer()).post(`/orders/${id}/pay`);
      expect(busy.status).toBe(409);
      expect(busy.body).toMatchObject({ statusCode: 409, error: 'Conflict', resources: [`order:${id}`] });
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(busy.headers['retry-after'])).toBeLessThanOrEqual(4);
    } finally {
      await held.release();
    }
    await request(app.getHttpServer()).post(`/orders/${id}/pay`).expect(200);
  });

  it('the health indicator reports every member: one leader, followers, raft index and version', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    const info = res.body.info.locks;
    expect(info).toMatchObject({ status: 'up', quorum: 2, reachable: 3 });
    expect(info.nodes.map((n: { node: string }) => n.node)).toEqual(cluster.hosts.map(hostOf));
    for (const node of info.nodes) {
      expect(node).toMatchObject({ status: 'up', role: expect.stringMatching(/^(leader|follower)$/) });
      expect(BigInt(node.raftIndex)).toBeGreaterThan(0n);
      expect(node.version).toMatch(/^3\.\d+\.\d+/);
      expect(typeof node.latencyMs).toBe('number');
    }
    const leaders = info.nodes.filter((n: { role: string }) => n.role === 'leader');
    expect(leaders).toHaveLength(1);
    expect(info.leader).toBe(leaders[0].node);
    expect(info.leader).toBe(hostOf((await cluster.leader()).url));
  });

  it('the majority down: @LockRoute answers 503, health is down (503); both recover when it returns', async () => {
    const down = cluster.members.slice(0, 2);
    await Promise.all(down.map((m) => m.kill()));
    const busy = await request(app.getHttpServer()).post(`/orders/${uniqueResource('down')}/pay`);
    expect(busy.status).toBe(503);
    expect(busy.body).toMatchObject({ statusCode: 503 });
    const health = await request(app.getHttpServer()).get('/health').expect(503);
    const details = health.body.details.locks;
    // The survivor may still name the old leader until its election timeout: at most it is up.
    expect(details).toMatchObject({ status: 'down', quorum: 2 });
    expect(details.reachable).toBeLessThan(2);
    for (const i of [0, 1]) expect(details.nodes[i]).toMatchObject({ node: hostOf(cluster.hosts[i]!), status: 'down' });
    // After its election timeout the survivor answers but sees no leader: it cannot serve a lock.
    let survivor: Record<string, unknown> = {};
    await until(async () => {
      const res = await request(app.getHttpServer()).get('/health').expect(503);
      survivor = res.body.details.locks.nodes[2];
      return survivor.error === 'no leader';
    }, 'the survivor reports no leader');
    expect(survivor).toMatchObject({ node: hostOf(cluster.hosts[2]!), status: 'down', error: 'no leader' });
    expect(typeof survivor.raftIndex).toBe('string');
    await Promise.all(down.map((m) => m.start('existing')));
    // Members serve clients once they see a leader; the survivor may learn of it a heartbeat later.
    await until(
      async () => (await request(app.getHttpServer()).get('/health')).body.status === 'ok',
      'every member reports the leader again',
    );
    await request(app.getHttpServer())
      .post(`/orders/${uniqueResource('back')}/pay`)
      .expect(200);
  }, 60_000);
});
