import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { primitiveOf, Redlock } from '@redlock-nest/core';
import { currentLock, RedlockService } from '@redlock-nest/nestjs';
import request from 'supertest';
import { HotCounterStore } from '../../sample-app/src/counters/hot-counter.store.js';
import { PRICE_LIST_LOCK } from '../../sample-app/src/prices/price-list.service.js';
import { PriceListStore } from '../../sample-app/src/prices/price-list.store.js';
import { RedisCluster, RedisServer } from '../harness/redis-server.js';
import { directClient, until } from '../nestjs/helpers.js';

// The reconciliation job is registered but never started by the clock in these tests.
const previousCron = process.env.RECONCILE_CRON;
process.env.RECONCILE_CRON = 'off';
const { AppModule } = await import('../../sample-app/src/app/app.module.js');
const { AppConfig, loadConfig } = await import('../../sample-app/src/app/app-config.js');

/** Holds every call while closed; counts who is inside, and the most at once. */
class Gate {
  inside = 0;
  maxInside = 0;
  private opened: Promise<void> = Promise.resolve();
  private openNow: () => void = () => undefined;
  close(): void {
    this.opened = new Promise<void>((resolve) => (this.openNow = resolve));
  }
  open(): void {
    this.openNow();
  }
  async pass<T>(work: () => Promise<T>): Promise<T> {
    this.inside++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    try {
      await this.opened;
      return await work();
    } finally {
      this.inside--;
    }
  }
}

/** The real price list, each call held at a gate and counted by the mode of the lock it runs under. */
const priceGate = new Gate();
const priceInside = { read: 0, write: 0, overlaps: 0 };
class GatedPriceListStore extends PriceListStore {
  private async probe<T>(work: () => Promise<T>): Promise<T> {
    const mode = primitiveOf(currentLock(PRICE_LIST_LOCK)!) === 'write' ? 'write' : 'read';
    priceInside[mode]++;
    if (priceInside.write > 1 || (priceInside.write > 0 && priceInside.read > 0)) priceInside.overlaps++;
    try {
      return await priceGate.pass(work);
    } finally {
      priceInside[mode]--;
    }
  }
  override list() {
    return this.probe(() => super.list());
  }
  override set(sku: string, priceCents: number, token: bigint) {
    return this.probe(() => super.set(sku, priceCents, token));
  }
}

/** The real counter store, each increment held at a gate. */
const counterGate = new Gate();
class GatedCounterStore extends HotCounterStore {
  override increment(name: string) {
    return counterGate.pass(() => super.increment(name));
  }
}

describe('sample app primitives: fenced price list, hot key with cohorting, lock dashboard', () => {
  let cluster: RedisCluster;
  let data: RedisServer;
  let dir: string;
  let outsider: Redlock;
  const apps: INestApplication[] = [];

  async function startInstance(name: string, env: Record<string, string> = {}): Promise<INestApplication> {
    const config = loadConfig({
      REDLOCK_NODES: cluster.urls.join(','),
      DATA_REDIS: data.url,
      ORDERS_DB: join(dir, 'orders.sqlite'),
      INSTANCE_ID: name,
      SEED_ORDERS: '0',
      SECTION_WORK_MS: '0',
      ...env,
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] })
      .overrideProvider(PriceListStore)
      .useFactory({
        factory: (c: InstanceType<typeof AppConfig>) => new GatedPriceListStore(directClient(c.dataRedis!)),
        inject: [AppConfig],
      })
      .overrideProvider(HotCounterStore)
      .useFactory({ factory: (c: InstanceType<typeof AppConfig>) => new GatedCounterStore(c.ordersDb), inject: [AppConfig] })
      .compile();
    const app = moduleRef.createNestApplication({ logger: ['error'] });
    await app.init();
    apps.push(app);
    return app;
  }

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    data = await RedisServer.start();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-sample-primitives-'));
    await startInstance('a');
    await startInstance('b', { DASHBOARD_TOKEN: 's3cret' });
    outsider = new Redlock(cluster.urls);
  });

  afterAll(async () => {
    if (previousCron === undefined) delete process.env.RECONCILE_CRON;
    else process.env.RECONCILE_CRON = previousCron;
    priceGate.open();
    counterGate.open();
    await Promise.all(apps.map((a) => a.close()));
    await outsider?.close();
    await cluster?.stop();
    await data?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const http = (i: number) => request(apps[i]!.getHttpServer());
  /** Counts one instance's `wait` events on a resource from now on. */
  function waits(i: number, resource: string): { count: number; off: () => void } {
    const seen = { count: 0, off: () => undefined as void };
    seen.off = apps[i]!.get(RedlockService).redlock.on('wait', (e) => {
      if (e.resources.includes(resource)) seen.count++;
    });
    return seen;
  }

  it('lets price-list readers of both instances in together, and a fenced price change waits and runs alone', async () => {
    priceGate.close();
    const readers = [http(0).get('/prices'), http(1).get('/prices')].map((r) => r.then((res) => res));
    await until(() => priceInside.read === 2, 'both readers are inside at once');
    const writerWaits = waits(0, PRICE_LIST_LOCK);
    const writer = http(0)
      .put('/prices/sku-1')
      .send({ priceCents: 1_299 })
      .then((res) => res);
    await until(() => writerWaits.count > 0, 'the writer waits for the readers');
    expect(priceInside).toMatchObject({ read: 2, write: 0 });
    priceGate.open();
    for (const r of await Promise.all(readers)) {
      expect(r.status).toBe(200);
      expect(r.body.prices).toContainEqual({ sku: 'sku-1', priceCents: 1_000, fence: '0' });
    }
    const written = await writer;
    writerWaits.off();
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ sku: 'sku-1', priceCents: 1_299, section: { instance: 'a' } });
    expect(BigInt(written.body.fence)).toBeGreaterThan(0n);

    // A writer inside keeps a reader of the other instance out until it is done.
    priceGate.close();
    const second = http(1)
      .put('/prices/sku-1')
      .send({ priceCents: 1_499 })
      .then((res) => res);
    await until(() => priceInside.write === 1, 'the second writer is inside');
    const readerWaits = waits(0, PRICE_LIST_LOCK);
    const late = http(0)
      .get('/prices')
      .then((res) => res);
    await until(() => readerWaits.count > 0, 'the reader waits for the writer');
    expect(priceInside).toMatchObject({ read: 0, write: 1 });
    priceGate.open();
    const secondBody = (await second).body as { fence: string };
    readerWaits.off();
    expect(BigInt(secondBody.fence)).toBeGreaterThan(BigInt(written.body.fence));
    // The reader ran after the writer: it sees the new price and the token that wrote it.
    expect((await late).body.prices).toContainEqual({ sku: 'sku-1', priceCents: 1_499, fence: secondBody.fence });
    expect(priceInside.overlaps).toBe(0);
  });

  it('refuses a price write whose token is older than one the store has seen: 409 StaleFencingToken, price unchanged', async () => {
    const raw = directClient(data.url);
    try {
      // As if a writer with a far newer token had written sku-2 already.
      await raw.hset('price-list:sku-2', 'fence', String(2n ** 62n), 'value', '777');
    } finally {
      raw.disconnect();
    }
    const refused = await http(1).put('/prices/sku-2').send({ priceCents: 1 });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'StaleFencingToken' });
    expect((await http(1).get('/prices')).body.prices).toContainEqual({ sku: 'sku-2', priceCents: 777, fence: String(2n ** 62n) });
  });

  it('hands the lock of a hot key over inside the process (cohorting): one acquisition on the nodes, then local hand-offs', async () => {
    counterGate.close();
    const first = http(0)
      .post('/counters/hot/increment')
      .then((res) => res);
    await until(() => counterGate.inside === 1, 'the first increment holds the lock');
    const handoffWaits = waits(0, 'counter:hot');
    const more = [1, 2].map(() =>
      http(0)
        .post('/counters/hot/increment')
        .then((res) => res),
    );
    // Both wait for a hand-off: the lock is held in this process, so they send nothing to the nodes.
    await until(() => handoffWaits.count === 2, 'two increments wait for the hand-off');
    counterGate.open();
    const answers = await Promise.all([first, ...more]);
    handoffWaits.off();
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(answers.map((r) => r.body.value as number).sort()).toEqual([1, 2, 3]);
    expect(counterGate.maxInside).toBe(1);
    expect((await http(0).get('/counters/hot')).body).toEqual({
      name: 'hot',
      value: 3,
      instance: 'a',
      acquisitions: { fromNodes: 1, handoffs: 2 },
    });
    // The keys stayed on the nodes meanwhile and are gone now: another process gets the lock at once.
    const after = await outsider.tryAcquire('counter:hot', 1_000);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('serves the lock dashboard on loopback, with the locks of every process, and refuses proxied requests', async () => {
    const page = await http(0).get('/locks/dashboard');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const held = await outsider.acquire('dashboard:shown', 20_000);
    try {
      const snapshot = await http(0).get('/locks/dashboard/data');
      expect(snapshot.status).toBe(200);
      expect(snapshot.body.nodes).toHaveLength(3);
      expect(snapshot.body.locks.map((l: { resource: string }) => l.resource)).toContain('dashboard:shown');
    } finally {
      await held.release();
    }
    const proxied = await http(0).get('/locks/dashboard').set('x-forwarded-for', '203.0.113.7');
    expect(proxied.status).toBe(403);
    expect(proxied.body.message).toMatch(/DASHBOARD_TOKEN/);
    // With DASHBOARD_TOKEN set (instance b), the bearer token opens it from anywhere; a wrong one does not.
    expect((await http(1).get('/locks/dashboard').set('x-forwarded-for', '203.0.113.7').set('authorization', 'Bearer s3cret')).status).toBe(
      200,
    );
    expect((await http(1).get('/locks/dashboard').set('x-forwarded-for', '203.0.113.7').set('authorization', 'Bearer wrong!')).status).toBe(
      403,
    );
  });
});
