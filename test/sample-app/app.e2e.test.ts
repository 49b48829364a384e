import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { Redlock } from '@redlock-nest/core';
import { primitiveOf } from '@redlock-nest/core';
import { currentLock } from '@redlock-nest/nestjs';
import Database from 'better-sqlite3';
import request from 'supertest';
import { CatalogStore } from '../../sample-app/src/catalog/catalog.store.js';
import type { LedgerReport } from '../../sample-app/src/orders/order.types.js';
import { RedisCluster } from '../harness/redis-server.js';
import { directClient, until } from '../nestjs/helpers.js';

// The job's schedule is read when its class loads: registered but never started by the
// clock here; the test fires its ticks itself. Hence the dynamic imports below.
const previousCron = process.env.RECONCILE_CRON;
process.env.RECONCILE_CRON = 'off';
const { AppModule } = await import('../../sample-app/src/app/app.module.js');
const { loadConfig } = await import('../../sample-app/src/app/app-config.js');
const { LedgerReconciler } = await import('../../sample-app/src/jobs/ledger-reconciler.js');
const { OrdersRepository } = await import('../../sample-app/src/orders/orders.repository.js');
const { PaymentsService } = await import('../../sample-app/src/payments/payments.service.js');
const { AppConfig } = await import('../../sample-app/src/app/app-config.js');
const { LedgerExporter } = await import('../../sample-app/src/exports/ledger-exporter.js');
const { EXPORT_PERMITS } = await import('../../sample-app/src/exports/exports.service.js');

/** A reconciler that signals when it starts and finishes only when the test says so. */
class GatedReconciler {
  calls = 0;
  readonly entered: Promise<void>;
  private enter!: () => void;
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  constructor() {
    this.entered = new Promise<void>((resolve) => (this.enter = resolve));
  }
  async reconcile(): Promise<LedgerReport> {
    this.calls++;
    this.enter();
    await this.gate;
    return { orders: 0, paidOrders: 0, payments: 0, paidTwice: 0, staleWritesRejected: 0 };
  }
  release(): void {
    this.open();
  }
}

/** Holds calls while closed; counts who is inside. Shared by both instances (one process). */
class Gate {
  inside = 0;
  maxInside = 0;
  private closed = false;
  private opened: Promise<void> = Promise.resolve();
  private open_: () => void = () => undefined;
  close(): void {
    this.closed = true;
    this.opened = new Promise<void>((resolve) => (this.open_ = resolve));
  }
  open(): void {
    this.closed = false;
    this.open_();
  }
  async pass<T>(work: () => Promise<T>): Promise<T> {
    this.inside++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    try {
      while (this.closed) await this.opened;
      return await work();
    } finally {
      this.inside--;
    }
  }
}

/**
 * The real catalog store, with each call held at a gate and checked against the lock it runs
 * under: a call under the write lock with anyone else inside, or a read while a writer is
 * inside, is an overlap.
 */
const catalogGate = new Gate();
const catalogInside = { read: 0, write: 0, maxRead: 0, overlaps: 0 };
class GatedCatalogStore extends CatalogStore {
  private async probe<T>(sku: string, work: () => Promise<T>): Promise<T> {
    const mode = primitiveOf(currentLock(`catalog:${sku}`)!) === 'write' ? 'write' : 'read';
    catalogInside[mode]++;
    catalogInside.maxRead = Math.max(catalogInside.maxRead, catalogInside.read);
    if (catalogInside.write > 1 || (catalogInside.write > 0 && catalogInside.read > 0)) catalogInside.overlaps++;
    try {
      return await catalogGate.pass(work);
    } finally {
      catalogInside[mode]--;
    }
  }
  override read(sku: string) {
    return this.probe(sku, () => super.read(sku));
  }
  override write(sku: string, priceCents: number, version: number, by: string) {
    return this.probe(sku, () => super.write(sku, priceCents, version, by));
  }
}

/** The real exporter, held at a gate: `exportGate.maxInside` is how many exports ran at once. */
const exportGate = new Gate();
const gatedExporter = (exporter: InstanceType<typeof LedgerExporter>) => ({
  render: (tenantId: string) => exportGate.pass(() => exporter.render(tenantId)),
});

describe('sample app: two instances, one orders database, three Redis nodes', () => {
  let cluster: RedisCluster;
  let dir: string;
  let db: string;
  const apps: INestApplication[] = [];
  const reconcilers = [new GatedReconciler(), new GatedReconciler()];
  let outsider: Redlock;

  async function startInstance(name: string, reconciler: GatedReconciler): Promise<INestApplication> {
    const config = loadConfig({
      REDLOCK_NODES: cluster.urls.join(','),
      ORDERS_DB: db,
      INSTANCE_ID: name,
      SEED_ORDERS: '10',
      PAYMENT_AUTH_MS: '0',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] })
      .overrideProvider(LedgerReconciler)
      .useValue(reconciler)
      .overrideProvider(CatalogStore)
      .useFactory({ factory: (c: InstanceType<typeof AppConfig>) => new GatedCatalogStore(c.ordersDb), inject: [AppConfig] })
      .overrideProvider(LedgerExporter)
      .useFactory({
        factory: (orders: InstanceType<typeof OrdersRepository>) => gatedExporter(new LedgerExporter(orders)),
        inject: [OrdersRepository],
      })
      .compile();
    const app = moduleRef.createNestApplication({ logger: ['error'] });
    await app.init();
    apps.push(app);
    return app;
  }

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-sample-e2e-'));
    db = join(dir, 'orders.sqlite');
    await startInstance('a', reconcilers[0]!);
    await startInstance('b', reconcilers[1]!);
    // Another client of the same lock service (same default key prefix as the app).
    outsider = new Redlock(cluster.urls);
  });

  afterAll(async () => {
    if (previousCron === undefined) delete process.env.RECONCILE_CRON;
    else process.env.RECONCILE_CRON = previousCron;
    for (const r of reconcilers) r.release();
    await Promise.all(apps.map((a) => a.close()));
    await outsider?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const http = (i: number) => request(apps[i]!.getHttpServer());

  it('pays an order once: 201 with a fencing token, then 200 already-paid from the other instance', async () => {
    const first = await http(0).post('/orders/1/pay');
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ status: 'paid', orderId: 1, instance: 'a' });
    expect(BigInt(first.body.fence)).toBeGreaterThan(0n);

    const second = await http(1).post('/orders/1/pay');
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ status: 'already-paid', orderId: 1, paidBy: 'a' });

    const order = await http(1).get('/orders/1');
    expect(order.body).toMatchObject({ status: 'paid', paidBy: 'a', fence: first.body.fence });
    expect(order.body.payments).toHaveLength(1);
  });

  it('shows the lock events of a payment on GET /locks/events, without tokens', async () => {
    const paid = await http(0).post('/orders/8/pay');
    expect(paid.status).toBe(201);
    const events = (await http(0).get('/locks/events')).body as Array<{ event: string; resources: string[]; detail: string }>;
    // The route's lock on the order: acquired (fenced), reused by the service's @WithLock, then released.
    const mine = events.filter((e) => e.resources.includes('order:8')).map((e) => e.event);
    expect(mine).toEqual(['acquire', 'acquired', 'release']);
    expect(events.find((e) => e.event === 'acquired' && e.resources.includes('order:8'))!.detail).toMatch(/fenced/);
    expect(JSON.stringify(events)).not.toMatch(/value|token/i);
  });

  it('answers 409 with Retry-After while someone else holds the order, and pays once it is free', async () => {
    const lock = await outsider.acquire('order:2', 20_000);
    const busy = await http(0).post('/orders/2/pay');
    expect(busy.status).toBe(409);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(busy.body).toMatchObject({ error: 'Conflict', resources: ['order:2'] });
    expect((await http(0).get('/orders/2')).body).toMatchObject({ status: 'open', payments: [] });

    await lock.release();
    const paid = await http(1).post('/orders/2/pay');
    expect(paid.status).toBe(201);
    expect(paid.body).toMatchObject({ status: 'paid', instance: 'b' });
  });

  it('writes with a token newer than any earlier holder of the order', async () => {
    const earlier = await outsider.acquire('order:3', 5_000, { fencing: true });
    await earlier.release();
    const paid = await http(0).post('/orders/3/pay');
    expect(paid.status).toBe(201);
    expect(BigInt(paid.body.fence)).toBeGreaterThan(earlier.fencingToken!);
  });

  it('locks by itself when the service is called outside a route (@WithLock with fencing)', async () => {
    const payments = apps[1]!.get(PaymentsService);
    const result = await payments.pay(6);
    expect(result).toMatchObject({ status: 'paid', orderId: 6, instance: 'b' });
    expect(result.status === 'paid' && BigInt(result.fence!)).toBeGreaterThan(0n);
    // The lock is released afterwards: another client takes it at once.
    const after = await outsider.tryAcquire('order:6', 1_000);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('runs the cron job on one instance at a time: the other skips its tick', async () => {
    const [jobA, jobB] = apps.map((a) => a.get(SchedulerRegistry).getCronJob('reconcile'));
    const [gateA, gateB] = reconcilers as [GatedReconciler, GatedReconciler];

    const tickA = jobA!.fireOnTick();
    await gateA.entered;
    await jobB!.fireOnTick(); // resolves without running: A holds job:reconcile
    expect(gateB.calls).toBe(0);

    gateA.release();
    await tickA;
    const repo = new OrdersRepository(db);
    try {
      expect(repo.jobRuns('reconcile').map((r) => r.instance)).toEqual(['a']);
      // A released the lock: B's next tick runs.
      gateB.release();
      await jobB!.fireOnTick();
      expect(gateB.calls).toBe(1);
      expect(repo.jobRuns('reconcile').map((r) => r.instance)).toEqual(['a', 'b']);
    } finally {
      repo.close();
    }
  });

  it('answers a write refused by the fence with 409 StaleFencingToken, and charges nothing', async () => {
    // As if a holder with a far newer token had claimed order 7: this request's token is older.
    const sqlite = new Database(db);
    try {
      sqlite.prepare('UPDATE orders SET fence = ? WHERE id = 7').run(2n ** 62n);
    } finally {
      sqlite.close();
    }
    const refused = await http(0).post('/orders/7/pay');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ statusCode: 409, error: 'StaleFencingToken', resources: ['order:7'] });
    expect((await http(0).get('/orders/7')).body).toMatchObject({ status: 'open', payments: [] });
  });

  /** This instance's lock events of one kind on one resource. */
  async function events(i: number, event: string, resource: string): Promise<number> {
    const all = (await http(i).get('/locks/events')).body as Array<{ event: string; resources: string[] }>;
    return all.filter((e) => e.event === event && e.resources.includes(resource)).length;
  }

  it('lets catalog readers in together on both instances, and runs a price change alone (read-write lock)', async () => {
    catalogGate.close();
    // Two reads, one per instance, both inside the store at once under the read lock.
    const readers = [http(0).get('/catalog/sku-3'), http(1).get('/catalog/sku-3')].map((r) => r.then((res) => res));
    await until(() => catalogInside.read === 2, 'both readers are inside');
    // A price change waits for them...
    const writer = http(0)
      .put('/catalog/sku-3/price')
      .send({ priceCents: 4_242 })
      .then((res) => res);
    await until(async () => (await events(0, 'wait', 'catalog:sku-3')) > 0, 'the writer waits');
    // ...and, waiting, keeps a new reader out (a stream of reads cannot starve it).
    const waitsBefore = await events(1, 'wait', 'catalog:sku-3');
    const late = http(1)
      .get('/catalog/sku-3')
      .then((res) => res);
    await until(async () => (await events(1, 'wait', 'catalog:sku-3')) > waitsBefore, 'the late reader waits');
    expect(catalogInside).toMatchObject({ read: 2, write: 0 });
    catalogGate.open();

    for (const r of await Promise.all(readers)) expect(r.body).toMatchObject({ sku: 'sku-3', version: 1 });
    const written = await writer;
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ sku: 'sku-3', priceCents: 4_242, version: 2, history: [{ version: 1 }, { version: 2, by: 'a' }] });
    // The late reader ran after the writer: it sees the new price with its history row.
    expect((await late).body).toMatchObject({ priceCents: 4_242, version: 2, history: [{}, { priceCents: 4_242 }] });
    expect(catalogInside).toMatchObject({ maxRead: 2, overlaps: 0 });
  });

  it(`runs at most ${EXPORT_PERMITS} exports of a tenant at once across instances (semaphore); the next gets 409 with Retry-After`, async () => {
    exportGate.close();
    const running = [http(0).get('/tenants/acme/orders.csv'), http(1).get('/tenants/acme/orders.csv')].map((r) => r.then((res) => res));
    await until(() => exportGate.inside === EXPORT_PERMITS, 'two exports run');
    for (const i of [0, 1]) {
      const busy = await http(i).get('/tenants/acme/orders.csv');
      expect(busy.status).toBe(409);
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(busy.body).toMatchObject({ error: 'Conflict', resources: ['export:acme'] });
    }
    // Another tenant has its own permits.
    const other = http(1)
      .get('/tenants/globex/orders.csv')
      .then((res) => res);
    await until(() => exportGate.inside === EXPORT_PERMITS + 1, "the other tenant's export runs");
    exportGate.open();
    for (const r of [...(await Promise.all(running)), await other]) {
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/text\/csv/);
      expect(r.text.split('\n')[0]).toBe('tenant,order,amount_cents,status,paid_by');
    }
    expect(exportGate.maxInside).toBe(EXPORT_PERMITS + 1);
    // The permits are back: the next export runs.
    expect((await http(0).get('/tenants/acme/orders.csv')).status).toBe(200);
  });

  it('runs batch jobs of a queue one at a time in order of arrival, whichever instance took them (fair lock)', async () => {
    // Plain clients that look at the queue on the nodes behind the library's back.
    const direct = cluster.urls.map(directClient);
    const queued = (count: number) =>
      until(
        async () => (await Promise.all(direct.map((c) => c.zcard('redlock:fair-queue:batch:nightly')))).every((n) => n === count),
        `${count} jobs queued`,
      );
    const held = await outsider.acquire('batch:nightly', 20_000, { fair: true });
    const calls: Array<Promise<unknown>> = [];
    try {
      for (const [i, job] of ['j1', 'j2', 'j3', 'j4'].entries()) {
        calls.push(
          http(i % 2)
            .post(`/batches/nightly/${job}`)
            .then((res) => expect(res.status).toBe(201)),
        );
        await queued(i + 1);
      }
    } finally {
      for (const c of direct) c.disconnect();
      await held.release();
    }
    await Promise.all(calls);
    const runs = (await http(0).get('/batches/nightly')).body as Array<{ job: string; instance: string }>;
    expect(runs.map((r) => `${r.job}@${r.instance}`)).toEqual(['j1@a', 'j2@b', 'j3@a', 'j4@b']);
  });

  it('reports the lock nodes on the terminus /health and keeps paying with a quorum after a node dies', async () => {
    const healthy = await http(0).get('/health');
    expect(healthy.status).toBe(200);
    expect(healthy.body).toMatchObject({
      status: 'ok',
      details: {
        redlock: { status: 'up', quorum: 2, reachable: 3 },
        instance: { status: 'up', id: 'a', locks: true },
      },
    });
    const nodes = healthy.body.details.redlock.nodes as Array<Record<string, unknown>>;
    expect(nodes.map((n) => n.node)).toEqual(cluster.urls.map((u) => new URL(u).host));
    for (const n of nodes) expect(n).toMatchObject({ status: 'up', role: 'master', latencyMs: expect.any(Number) });

    await cluster.server(2).kill();
    const degraded = await http(0).get('/health');
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ status: 'degraded', details: { redlock: { status: 'degraded', quorum: 2, reachable: 2 } } });
    expect(degraded.body.details.redlock.nodes[2]).toMatchObject({ status: 'down', error: expect.any(String) });
    const paid = await http(1).post('/orders/4/pay');
    expect(paid.status).toBe(201);

    await cluster.server(1).kill();
    const down = await http(0).get('/health');
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: 'error',
      error: { redlock: { status: 'down', reachable: 1 } },
      details: { redlock: { status: 'down', quorum: 2, reachable: 1 }, instance: { status: 'up', id: 'a' } },
    });
    const refused = await http(0).post('/orders/5/pay');
    expect(refused.status).toBe(503);
    expect((await http(0).get('/orders/5')).body).toMatchObject({ status: 'open' });
  });
});
