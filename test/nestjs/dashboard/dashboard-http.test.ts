/**
 * The lock dashboard over HTTP, under Express and Fastify: refused without a guard, guarded,
 * showing locks held by another process (a separate Redlock), and force release only when
 * allowed and confirmed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockLostError, Redlock, RedlockArgumentError } from '@redlock-nest/core';
import { RedlockDashboardModule, RedlockModule, RedlockService } from '@redlock-nest/nestjs';
import request from 'supertest';
import { RedisCluster } from '../../harness/redis-server.js';
import { rejection, unique, until } from '../helpers.js';

/** Lets a request in only with `x-admin: yes`: a guard class, resolved in the dashboard's module. */
@Injectable()
class AdminHeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return req.headers['x-admin'] === 'yes';
  }
}

describe('RedlockDashboardModule.forRoot options', () => {
  it('refuses to start without a guard or public: true, naming both fixes', () => {
    const attempt = () => RedlockDashboardModule.forRoot({ path: '/locks' });
    expect(attempt).toThrow(RedlockArgumentError);
    expect(attempt).toThrow(/guard: AdminGuard.*public: true/);
    expect(() => RedlockDashboardModule.forRoot({ path: '/locks', public: false })).toThrow(RedlockArgumentError);
  });

  it('refuses a path with route syntax and a guard that is not a CanActivate', () => {
    expect(() => RedlockDashboardModule.forRoot({ path: '/locks/:id', public: true })).toThrow(/plain URL path/);
    expect(() => RedlockDashboardModule.forRoot({ path: '/locks', guard: {} as CanActivate })).toThrow(/CanActivate/);
    expect(() => RedlockDashboardModule.forRoot({ path: '/locks', public: true, refreshMs: 0 })).toThrow(/refreshMs/);
  });
});

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

let cluster: RedisCluster;
/** Another process, as far as the app can tell: its own Redlock over the same nodes. */
let other: Redlock;

beforeAll(async () => {
  cluster = await RedisCluster.start(3);
  other = new Redlock(cluster.urls);
});

afterAll(async () => {
  await other?.close();
  await cluster?.stop();
});

describe.each(adapters)('dashboard over HTTP (%s)', (name, makeAdapter) => {
  /** Public, read-only, under the global prefix `api`. */
  let open: INestApplication;
  /** Behind AdminHeaderGuard, force release allowed. */
  let admin: INestApplication;

  async function start(dashboard: ReturnType<typeof RedlockDashboardModule.forRoot>, prefix?: string): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true }), dashboard],
    }).compile();
    const adapter = makeAdapter();
    const app = adapter ? moduleRef.createNestApplication(adapter as never) : moduleRef.createNestApplication();
    if (prefix) app.setGlobalPrefix(prefix);
    await app.init();
    if (adapter) await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
    return app;
  }

  beforeAll(async () => {
    open = await start(RedlockDashboardModule.forRoot({ path: '/locks', public: true }), 'api');
    admin = await start(
      RedlockDashboardModule.forRoot({ path: 'ops/locks', guard: AdminHeaderGuard, allowForceRelease: true, timelineSize: 4 }),
    );
  });

  afterAll(async () => {
    await open?.close();
    await admin?.close();
  });

  const data = async (app: INestApplication, path: string) =>
    (await request(app.getHttpServer()).get(`${path}/data`).set('x-admin', 'yes').expect(200)).body;
  const row = async (app: INestApplication, path: string, resource: string) =>
    (await data(app, path)).locks.find((l: { resource: string }) => l.resource === resource);
  /**
   * Acquisitions and releases return at a quorum; the last node's reply may come later. Polled:
   * no event tells when a node other than ours applied a command.
   */
  const heldEverywhere = (app: INestApplication, path: string, resource: string) =>
    until(async () => (await row(app, path, resource))?.heldOn === 3, `${resource} is held on every node`);
  const gone = (app: INestApplication, path: string, resource: string) =>
    until(async () => (await row(app, path, resource)) === undefined, `${resource} is gone from the dashboard`);

  it('listens to no lock event until a page asks for data, then keeps only the last timelineSize', async () => {
    const service = admin.get(RedlockService);
    const redlock = service.redlock as Redlock;
    await request(admin.getHttpServer()).get('/ops/locks').set('x-admin', 'yes').expect(200);
    expect(redlock.listenerCount('acquired')).toBe(0); // a closed (or never polled) page costs the lock path nothing
    expect((await data(admin, '/ops/locks')).timeline).toEqual({ events: [], acquisitionsPerSecond: 0, since: expect.any(Number) });
    expect(redlock.listenerCount('acquired')).toBe(1);
    const resource = unique(`${name}-ring`);
    for (let i = 0; i < 3; i++) await service.using(resource, 5_000, () => undefined);
    const { events } = (await data(admin, '/ops/locks')).timeline;
    expect(events.map((e: { type: string }) => e.type)).toEqual(['released', 'acquired', 'released', 'acquired']);
  });

  it('serves one self-contained page under the global prefix, with a CSP that allows only its own script', async () => {
    const res = await request(open.getHttpServer()).get('/api/locks').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'sha256-[^']+'/);
    expect(res.text).toContain('<script>');
    expect(res.text).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it('shows the nodes up, with their round trip', async () => {
    const body = await data(open, '/api/locks');
    expect(body.quorum).toBe(2);
    expect(body.nodes.map((n: { node: string }) => n.node)).toEqual(cluster.urls.map((u) => u.replace('redis://', '')));
    for (const n of body.nodes) expect(n).toMatchObject({ status: 'up', restartRule: expect.any(String), latencyMs: expect.any(Number) });
  });

  it("shows another process' lock with its fencing token and TTL, and drops it once released", async () => {
    const resource = unique(`${name}-held`);
    const lock = await other.acquire(resource, 20_000, { fencing: true });
    await heldEverywhere(open, '/api/locks', resource);
    const body = await data(open, '/api/locks');
    const held = body.locks.find((l: { resource: string }) => l.resource === resource);
    expect(held).toMatchObject({
      kind: 'mutex',
      heldOn: 3,
      fencingToken: String(lock.fencingToken),
      holder: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    expect(held.ttlMs).toBeGreaterThan(0);
    expect(held.ttlMs).toBeLessThanOrEqual(20_000);
    expect(JSON.stringify(body)).not.toContain(lock.value); // the owner token never leaves the server
    await lock.release();
    await gone(open, '/api/locks', resource);
  });

  it('shows read locks and semaphores with their holder counts', async () => {
    const [reads, sem] = [unique(`${name}-rw`), unique(`${name}-sem`)];
    const readers = [await other.acquire(reads, 20_000, { mode: 'read' }), await other.acquire(reads, 20_000, { mode: 'read' })];
    const permits = [await other.acquire(sem, 20_000, { permits: 3 }), await other.acquire(sem, 20_000, { permits: 3 })];
    const body = await data(open, '/api/locks');
    const find = (r: string) => body.locks.find((l: { resource: string }) => l.resource === r);
    expect(find(reads)).toMatchObject({ kind: 'read', holders: 2 });
    expect(find(sem)).toMatchObject({ kind: 'semaphore', holders: 2 });
    expect(find(sem).permitsAtLeast).toBeGreaterThanOrEqual(1);
    await Promise.all([...readers, ...permits].map((l) => l.release()));
  });

  it("puts the app's own lock events on the timeline once a page has asked for data", async () => {
    await data(open, '/api/locks'); // opens the timeline
    const resource = unique(`${name}-events`);
    await open.get(RedlockService).using(resource, 5_000, () => undefined);
    const body = await data(open, '/api/locks');
    const types = body.timeline.events
      .filter((e: { resources: string[] }) => e.resources.includes(resource))
      .map((e: { type: string }) => e.type);
    expect(types).toEqual(['released', 'acquired']); // newest first
    expect(body.timeline.since).toEqual(expect.any(Number));
  });

  it('answers 403 to page and data when the guard says no', async () => {
    await request(admin.getHttpServer()).get('/ops/locks').expect(403);
    await request(admin.getHttpServer()).get('/ops/locks/data').expect(403);
    await request(admin.getHttpServer()).post('/ops/locks/release').send({ resource: 'x', confirm: 'x' }).expect(403);
    await request(admin.getHttpServer()).get('/ops/locks').set('x-admin', 'yes').expect(200);
  });

  it('refuses force release on a read-only dashboard, naming the option', async () => {
    const resource = unique(`${name}-ro`);
    const lock = await other.acquire(resource, 20_000);
    const res = await request(open.getHttpServer()).post('/api/locks/release').send({ resource, confirm: resource }).expect(403);
    expect(res.body.message).toMatch(/allowForceRelease: true/);
    expect((await other.inspect(resource)).holder).toBeDefined();
    await lock.release();
  });

  it('force-releases only with the resource name repeated, and the old token goes stale', async () => {
    const resource = unique(`${name}-force`);
    const lock = await other.acquire(resource, 20_000, { fencing: true });
    await heldEverywhere(admin, '/ops/locks', resource);
    const server = admin.getHttpServer();
    await request(server).post('/ops/locks/release').set('x-admin', 'yes').send({ resource }).expect(400);
    await request(server)
      .post('/ops/locks/release')
      .set('x-admin', 'yes')
      .send({ resource, confirm: `${resource} ` })
      .expect(400);
    expect((await other.inspect(resource)).holder).toBeDefined();

    const res = await request(server).post('/ops/locks/release').set('x-admin', 'yes').send({ resource, confirm: resource }).expect(200);
    expect(res.body).toMatchObject({ resource, released: 3, holder: expect.stringMatching(/^[0-9a-f]{12}$/) });
    expect(BigInt(res.body.fencingCounter)).toBeGreaterThan(lock.fencingToken!);
    expect(await row(admin, '/ops/locks', resource)).toBeUndefined(); // the force release waits for every node
    expect(await rejection(lock.extend(20_000))).toBeInstanceOf(LockLostError);
  });
});
