/**
 * The dashboard in a real browser (Chromium through playwright-core): it shows the nodes and a
 * lock held by another process with its fencing token, follows a release, shows a paused node
 * as down and then up again, and renders a resource named like markup as text.
 *
 * `WRITE_SCREENSHOT=1` also writes docs/img/dashboard.png from this run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redlock, type Lock } from '@redlock-nest/core';
import { RedlockDashboardModule, RedlockModule, RedlockService } from '@redlock-nest/nestjs';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { RedisCluster } from '../../harness/redis-server.js';
import { unique } from '../helpers.js';

const XSS = '<img src=x onerror=alert(1)>';

/** The page's DOM as the checks below read it: they run in the browser, and the test program has no DOM lib. */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<PageElement> & { readonly length: number };
  querySelector(selector: string): PageElement | null;
};
const SCREENSHOT = fileURLToPath(new URL('../../../docs/img/dashboard.png', import.meta.url));

/** The system Chromium; playwright-core downloads no browser of its own. */
function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is missing: apt-get install chromium (the dashboard browser test drives the system Chromium)');
  }
}

/** The row of `resource` in the locks table, found by its dataset (no selector escaping needed). */
function lockRowText(page: Page, resource: string): Promise<string | null> {
  return page.evaluate((r) => {
    const row = [...document.querySelectorAll('#locks tr')].find((tr) => tr.dataset.resource === r);
    return row ? row.textContent : null;
  }, resource);
}

describe('dashboard in a browser', () => {
  let cluster: RedisCluster;
  let other: Redlock;
  let app: INestApplication;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  const held: Lock[] = [];
  let waiting: Promise<unknown> = Promise.resolve();

  beforeAll(async () => {
    const executablePath = chromiumPath();
    cluster = await RedisCluster.start(3);
    other = new Redlock(cluster.urls);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true }),
        RedlockDashboardModule.forRoot({ path: '/locks', public: true, refreshMs: 250, allowForceRelease: true }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    await page.goto(`${url}/locks`);
  });

  afterAll(async () => {
    for (const lock of held) await lock.release().catch(() => undefined);
    await waiting;
    await browser?.close();
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  it('shows every node up', async () => {
    await page.waitForFunction((n) => document.querySelectorAll('#nodes tr[data-status=up]').length === n, cluster.urls.length);
    const labels = await page.evaluate(() => [...document.querySelectorAll('#nodes tr')].map((r) => r.dataset.node));
    expect(labels).toEqual(cluster.urls.map((u) => u.replace('redis://', '')));
  });

  it("shows another process' lock with its fencing token, and follows its release", async () => {
    const resource = unique('order');
    const lock = await other.acquire(resource, 30_000, { fencing: true });
    // Held on every node: the acquisition returns at a quorum, and a poll may see it before the last node.
    await page.waitForFunction(
      (r) => [...document.querySelectorAll('#locks tr')].some((tr) => tr.dataset.resource === r && tr.textContent!.includes('3/3')),
      resource,
    );
    const text = await lockRowText(page, resource);
    expect(text).toContain(String(lock.fencingToken));
    expect(text).toContain('mutex');
    await lock.release();
    await page.waitForFunction((r) => ![...document.querySelectorAll('#locks tr')].some((tr) => tr.dataset.resource === r), resource);
  });

  it('renders a resource named like markup as text, and no script of it runs', async () => {
    // The name on the timeline (the app's own lock on it) and in the locks table (another holder's).
    await app.get(RedlockService).using(XSS, 5_000, () => undefined);
    held.push(await other.acquire(XSS, 30_000, { fencing: true }));
    await page.waitForFunction((r) => [...document.querySelectorAll('#locks code')].some((c) => c.textContent === r), XSS);
    await page.waitForFunction((r) => [...document.querySelectorAll('#events code')].some((c) => c.textContent === r), XSS);
    expect(await page.$$eval('#locks img, #events img', (imgs) => imgs.length)).toBe(0);
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('shows a paused node as down, then up again once it resumes', async () => {
    // Locks and events for a full picture (and the screenshot).
    held.push(await other.acquire('report:daily', 30_000, { permits: 3 }), await other.acquire('report:daily', 30_000, { permits: 3 }));
    held.push(await other.acquire('catalog:import', 30_000, { mode: 'read' }));
    const service = app.get(RedlockService);
    for (let i = 0; i < 3; i++) await service.using(`invoice:${i + 1}`, 5_000, () => undefined);
    // A fair waiter of the app behind another process' lock: a queue and contention events.
    held.push(await other.acquire('order:42', 30_000, { fencing: true }));
    waiting = service.using('order:42', 5_000, () => undefined, { fair: true, retry: { retries: Infinity }, timeoutMs: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll('#locks tr[data-resource]').length >= 4);
    await page.waitForFunction(() => document.querySelector('#events li.contention') !== null);
    await page.waitForFunction(() => document.querySelectorAll('#events li.released').length >= 3);
    const shot = await page.screenshot({ fullPage: true });
    expect(shot.length).toBeGreaterThan(0);
    if (process.env.WRITE_SCREENSHOT === '1') {
      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      writeFileSync(SCREENSHOT, shot);
    }

    const label = cluster.urls[1]!.replace('redis://', '');
    cluster.server(1).pause();
    try {
      await page.waitForSelector(`#nodes tr[data-node="${label}"][data-status=down]`, { timeout: 20_000 });
    } finally {
      cluster.server(1).resume();
    }
    await page.waitForSelector(`#nodes tr[data-node="${label}"][data-status=up]`, { timeout: 20_000 });
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
