/**
 * The sample app's lock dashboard in a real browser (system Chromium through playwright-core),
 * with the sample app running as `npm start` runs it: 5 Redis nodes, a data Redis, its
 * loopback-only guard. The page shows the nodes, a fair lock held by another OS process with its
 * fencing token and the app's jobs queued behind it, and follows its release; during demo-like
 * traffic it shows every primitive at once (readers of the price list, export permits, a fair
 * queue, a hot counter with hand-off waiters) and offers no force release: this dashboard is
 * read-only.
 *
 * `WRITE_SCREENSHOT=1` also writes docs/img/dashboard.png, the README's screenshot, from this run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { HotCounterStore } from '../../sample-app/src/counters/hot-counter.store.js';
import { LedgerExporter } from '../../sample-app/src/exports/ledger-exporter.js';
import { PriceListStore } from '../../sample-app/src/prices/price-list.store.js';
import {
  lockRowCells,
  openBrowser,
  waitForFairQueue,
  waitForLockRow,
  waitForNoLockRow,
  waitForNodesUp,
  type DashboardBrowser,
} from '../harness/browser.js';
import { runScript, type ChildScript } from '../harness/child-script.js';
import { RedisCluster, RedisServer } from '../harness/redis-server.js';
import { directClient } from '../nestjs/helpers.js';
import { ROOT } from './build-sample-app.js';

// The reconciliation job is registered but never started by the clock here.
const previousCron = process.env.RECONCILE_CRON;
process.env.RECONCILE_CRON = 'off';
const { AppModule } = await import('../../sample-app/src/app/app.module.js');
const { AppConfig, loadConfig } = await import('../../sample-app/src/app/app-config.js');

const SCREENSHOT = join(ROOT, 'docs/img/dashboard.png');
const CORE = pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href;

/** The page's DOM, as the checks that run in the browser read it (the test program has no DOM lib). */
declare const document: { querySelectorAll(selector: string): { readonly length: number } };

/** Holds every call that passes it while closed: requests stay inside their locks until the test opens it. */
class Gate {
  private opened: Promise<void> = Promise.resolve();
  private openNow: () => void = () => undefined;
  close(): void {
    this.opened = new Promise<void>((resolve) => (this.openNow = resolve));
  }
  open(): void {
    this.openNow();
  }
  async pass<T>(work: () => Promise<T>): Promise<T> {
    await this.opened;
    return work();
  }
}
const gate = new Gate();

// The real stores, each call held at the gate inside the lock the route took.
class GatedPriceListStore extends PriceListStore {
  override list() {
    return gate.pass(() => super.list());
  }
}
class GatedExporter extends LedgerExporter {
  override render(tenantId: string) {
    return gate.pass(() => super.render(tenantId));
  }
}
class GatedCounterStore extends HotCounterStore {
  override increment(name: string) {
    return gate.pass(() => super.increment(name));
  }
}

/** A lock held by another OS process (a child node process with its own Redlock), until released. */
interface Holder {
  readonly token: string;
  release(): Promise<void>;
}

describe('sample app dashboard in a browser', () => {
  let cluster: RedisCluster;
  let data: RedisServer;
  let dir: string;
  let app: INestApplication;
  let url: string;
  let b: DashboardBrowser;
  const holders: ChildScript[] = [];

  /** A fair lock on `resource`, with a fencing token, held by a child process until `release()`. */
  async function holdElsewhere(resource: string): Promise<Holder> {
    let held: (token: string) => void = () => undefined;
    const token = new Promise<string>((resolve) => (held = resolve));
    const script = runScript(
      `
      const { Redlock } = await import(${JSON.stringify(CORE)});
      const redlock = new Redlock(${JSON.stringify(cluster.urls)});
      const lock = await redlock.acquire(${JSON.stringify(resource)}, 120_000, { fair: true, fencing: true });
      process.once('SIGTERM', () => void lock.release().then(() => redlock.close()));
      console.log('held ' + lock.fencingToken);
      `,
      (line) => {
        const match = /^held (\d+)$/.exec(line);
        if (match) held(match[1]!);
      },
    );
    holders.push(script);
    const died = script.done.then(({ code }) => {
      throw new Error(`the holder of ${resource} exited with ${code} before it held the lock`);
    });
    died.catch(() => undefined);
    return {
      token: await Promise.race([token, died]),
      release: async () => {
        script.child.kill('SIGTERM');
        expect((await script.done).code).toBe(0);
      },
    };
  }

  const http = () => request(app.getHttpServer());

  beforeAll(async () => {
    cluster = await RedisCluster.start(5);
    data = await RedisServer.start();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-sample-dashboard-'));
    const config = loadConfig({
      REDLOCK_NODES: cluster.urls.join(','),
      DATA_REDIS: data.url,
      ORDERS_DB: join(dir, 'orders.sqlite'),
      INSTANCE_ID: 'app-1',
      SEED_ORDERS: '20',
      SECTION_WORK_MS: '0',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] })
      .overrideProvider(PriceListStore)
      .useFactory({
        factory: (c: InstanceType<typeof AppConfig>) => new GatedPriceListStore(directClient(c.dataRedis!)),
        inject: [AppConfig],
      })
      .overrideProvider(LedgerExporter)
      .useClass(GatedExporter)
      .overrideProvider(HotCounterStore)
      .useFactory({ factory: (c: InstanceType<typeof AppConfig>) => new GatedCounterStore(c.ordersDb), inject: [AppConfig] })
      .compile();
    app = moduleRef.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    url = `${await app.getUrl()}/locks/dashboard`;
    b = await openBrowser();
    // The browser connects over loopback: the sample's guard lets it in.
    await b.page.goto(url);
  }, 60_000);

  afterAll(async () => {
    gate.open();
    for (const h of holders) h.child.kill('SIGKILL');
    await Promise.all(holders.map((h) => h.done));
    await b?.browser.close();
    await app?.close();
    await cluster?.stop();
    await data?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (previousCron === undefined) delete process.env.RECONCILE_CRON;
    else process.env.RECONCILE_CRON = previousCron;
  });

  it('loads over loopback and shows the 5 lock nodes up, quorum 3', async () => {
    const labels = await waitForNodesUp(b.page, 5);
    expect(labels).toEqual(cluster.urls.map((u) => u.replace('redis://', '')));
    expect(await b.page.textContent('#status')).toContain('quorum 3 of 5');
  });

  it("shows another process' fair lock with its fencing token and the app's jobs queued behind it, and follows its release", async () => {
    const holder = await holdElsewhere('batch:nightly');
    // Submitted one at a time, each once the page shows it queued: their order is known.
    const jobs = [];
    for (const [i, job] of ['job-1', 'job-2'].entries()) {
      jobs.push(
        http()
          .post(`/batches/nightly/${job}`)
          .then((res) => res),
      );
      await waitForFairQueue(b.page, 'batch:nightly', i + 1);
    }
    // Held on every node (the acquisition returns at a quorum), by a holder this app does not know.
    await waitForLockRow(b.page, 'batch:nightly', '5/5');
    const [, kind, owner, token, , , waiters, action] = (await lockRowCells(b.page, 'batch:nightly'))!;
    expect({ kind, token, waiters, action }).toEqual({
      kind: 'fair',
      token: holder.token,
      waiters: '2 (fair queue: #1 \u2192 #2)',
      action: '',
    });
    expect(owner).toMatch(/^[0-9a-f]{12}$/);

    await holder.release();
    await waitForNoLockRow(b.page, 'batch:nightly');
    // The jobs got the lock in the order they queued, and the app's timeline shows them acquire it.
    expect((await Promise.all(jobs)).map((r) => r.status)).toEqual([201, 201]);
    expect((await http().get('/batches/nightly')).body.map((r: { job: string }) => r.job)).toEqual(['job-1', 'job-2']);
    await b.page.waitForFunction(() => document.querySelectorAll('#events li.acquired').length >= 2);
    expect(await b.page.$$eval('#events li.acquired code', (codes) => codes.map((c) => c.textContent))).toContain('batch:nightly');
    expect(b.pageErrors).toEqual([]);
  });

  it('shows every primitive of the demo held at once, read-only, and empties when the traffic ends', async () => {
    // The demo's traffic, before: payments (plain locks) and a fenced price change, for the timeline.
    for (const id of [1, 2, 3]) expect((await http().post(`/orders/${id}/pay`)).status).toBe(201);
    expect((await http().put('/prices/sku-1').send({ priceCents: 1_299 })).status).toBe(200);

    // Now requests that stay inside their locks until the gate opens.
    gate.close();
    const holder = await holdElsewhere('batch:demo');
    const jobs = [];
    for (const [i, job] of ['job-1', 'job-2', 'job-3'].entries()) {
      jobs.push(
        http()
          .post(`/batches/demo/${job}`)
          .then((res) => res),
      );
      await waitForFairQueue(b.page, 'batch:demo', i + 1);
    }
    const reads = [1, 2, 3].map(() =>
      http()
        .get('/prices')
        .then((res) => res),
    );
    const exports = [1, 2].map(() =>
      http()
        .get('/tenants/acme/orders.csv')
        .then((res) => res),
    );
    await waitForLockRow(b.page, 'price-list', 'read \u00d73', '5/5');
    await waitForLockRow(b.page, 'export:acme', 'semaphore 2 of', '5/5');
    // A third export finds both permits taken: refused at once.
    expect((await http().get('/tenants/acme/orders.csv')).status).toBe(409);

    // Read-only: no force-release control on any row, and the endpoint refuses.
    expect(await b.page.$$('#locks button')).toHaveLength(0);
    expect(await b.page.isHidden('#release-panel')).toBe(true);
    const refused = await b.page.evaluate(
      (at) =>
        fetch(`${at}/release`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"resource":"batch:demo","confirm":"batch:demo"}',
        }).then((r) => r.status),
      url,
    );
    expect(refused).toBe(403);

    // Last, as they wait at most 10 s: a hot key, one increment inside, two waiting for its hand-off.
    const increments = [1, 2, 3].map(() =>
      http()
        .post('/counters/hot/increment')
        .then((res) => res),
    );
    await waitForLockRow(b.page, 'counter:hot', 'mutex', '5/5');

    const shot = await b.page.screenshot({ fullPage: true });
    expect(shot.length).toBeGreaterThan(0);
    if (process.env.WRITE_SCREENSHOT === '1') {
      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      writeFileSync(SCREENSHOT, shot);
    }

    gate.open();
    await holder.release();
    expect((await Promise.all(reads)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await Promise.all(exports)).map((r) => r.status)).toEqual([200, 200]);
    expect((await Promise.all(increments)).map((r) => r.body.value as number).sort()).toEqual([1, 2, 3]);
    expect((await Promise.all(jobs)).map((r) => r.status)).toEqual([201, 201, 201]);
    for (const resource of ['batch:demo', 'price-list', 'export:acme', 'counter:hot']) await waitForNoLockRow(b.page, resource);
    expect(b.dialogs).toEqual([]);
    expect(b.pageErrors).toEqual([]);
  }, 60_000);
});
