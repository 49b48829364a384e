/**
 * The dashboard in a real browser (Chromium through playwright-core), against a test app that
 * allows force release: it shows the nodes and a lock held by another process with its fencing
 * token, follows a release, shows a paused node as down and then up again, renders a resource
 * named like markup as text, and force-releases a lock only once its name is typed again.
 *
 * The sample app's dashboard (read-only) and the README's screenshot: test/sample-app/dashboard-browser.e2e.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redlock, type Lock } from '@redlock-nest/core';
import { RedlockDashboardModule, RedlockModule, RedlockService } from '@redlock-nest/nestjs';
import type { Page } from 'playwright-core';
import {
  lockRowCells,
  lockRowText,
  openBrowser,
  waitForLockRow,
  waitForNoLockRow,
  waitForNodesUp,
  waitForPolls,
  type DashboardBrowser,
} from '../../harness/browser.js';
import { RedisCluster } from '../../harness/redis-server.js';
import { unique } from '../helpers.js';

const XSS = '<img src=x onerror=alert(1)>';

/** The page's DOM as the checks below read it: they run in the browser, and the test program has no DOM lib. */
declare const document: {
  querySelectorAll(selector: string): Iterable<{
    readonly textContent: string | null;
    readonly dataset: Record<string, string | undefined>;
  }> & {
    readonly length: number;
  };
  querySelector(selector: string): { readonly textContent: string | null } | null;
};

describe('dashboard in a browser', () => {
  let cluster: RedisCluster;
  let other: Redlock;
  let app: INestApplication;
  let b: DashboardBrowser;
  let page: Page;
  const held: Lock[] = [];
  let waiting: Promise<unknown> = Promise.resolve();

  beforeAll(async () => {
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
    b = await openBrowser();
    page = b.page;
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    await page.goto(`${url}/locks`);
  });

  afterAll(async () => {
    for (const lock of held) await lock.release().catch(() => undefined);
    await waiting;
    await b?.browser.close();
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  it('shows every node up', async () => {
    const labels = await waitForNodesUp(page, cluster.urls.length);
    expect(labels).toEqual(cluster.urls.map((u) => u.replace('redis://', '')));
  });

  it("shows another process' lock with its fencing token, and follows its release", async () => {
    const resource = unique('order');
    const lock = await other.acquire(resource, 30_000, { fencing: true });
    // Held on every node: the acquisition returns at a quorum, and a poll may see it before the last node.
    await waitForLockRow(page, resource, '3/3');
    const text = await lockRowText(page, resource);
    expect(text).toContain(String(lock.fencingToken));
    expect(text).toContain('mutex');
    await lock.release();
    await waitForNoLockRow(page, resource);
  });

  it('renders a resource named like markup as text, and no script of it runs', async () => {
    // The name on the timeline (the app's own lock on it) and in the locks table (another holder's).
    await app.get(RedlockService).using(XSS, 5_000, () => undefined);
    held.push(await other.acquire(XSS, 30_000, { fencing: true }));
    await page.waitForFunction((r) => [...document.querySelectorAll('#locks code')].some((c) => c.textContent === r), XSS);
    await page.waitForFunction((r) => [...document.querySelectorAll('#events code')].some((c) => c.textContent === r), XSS);
    expect(await page.$$eval('#locks img, #events img', (imgs) => imgs.length)).toBe(0);
    expect(b.dialogs).toEqual([]);
    expect(b.pageErrors).toEqual([]);
  });

  it('shows a paused node as down, then up again once it resumes', async () => {
    // Locks of every kind and events on the page while a node goes down.
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

    const label = cluster.urls[1]!.replace('redis://', '');
    cluster.server(1).pause();
    try {
      await page.waitForSelector(`#nodes tr[data-node="${label}"][data-status=down]`, { timeout: 20_000 });
    } finally {
      cluster.server(1).resume();
    }
    await page.waitForSelector(`#nodes tr[data-node="${label}"][data-status=up]`, { timeout: 20_000 });
    expect(b.dialogs).toEqual([]);
    expect(b.pageErrors).toEqual([]);
  }, 60_000);

  it('force-releases a lock only once its name is typed again, and fences its old holder off', async () => {
    const resource = unique('order');
    const lock = await other.acquire(resource, 30_000, { fencing: true });
    await waitForLockRow(page, resource, '3/3');
    const submit = '#release-form button[type=submit]';
    const result = (): Promise<string | null> => page.textContent('#release-result');

    // The row's button opens the confirmation, which names the lock: that alone frees nothing.
    await page.click(`#locks tr[data-resource="${resource}"] button.release`);
    expect(await page.isVisible('#release-panel')).toBe(true);
    expect(await page.textContent('#release-resource')).toBe(resource);
    expect(await page.inputValue('#release-confirm')).toBe('');
    // Not the name: refused, saying why, and the lock stays where it was.
    await page.fill('#release-confirm', `${resource} `);
    await page.click(submit);
    await page.waitForFunction(() => document.querySelector('#release-result')!.textContent!.startsWith('refused: '));
    expect(await result()).toContain('must repeat the resource name');
    await waitForPolls(page, 2);
    expect((await lockRowCells(page, resource))?.[3]).toBe(String(lock.fencingToken));
    expect((await other.inspect(resource)).holder).toBeDefined();

    // The name typed again: freed on every node, the fencing counter raised past the holder's token.
    await page.fill('#release-confirm', resource);
    await page.click(submit);
    await page.waitForFunction(() => document.querySelector('#release-result')!.textContent!.startsWith('released on '));
    const counter = /released on 3 node\(s\); fencing counter now (\d+)$/.exec((await result())!);
    expect(counter).not.toBeNull();
    expect(BigInt(counter![1]!)).toBeGreaterThan(lock.fencingToken!);
    await waitForNoLockRow(page, resource);
    await page.waitForFunction(
      (r) => [...document.querySelectorAll('#events li.force-released code')].some((c) => c.textContent === r),
      resource,
    );
    expect((await other.inspect(resource)).holder).toBeUndefined();
    // The old holder learns it at its next extension.
    await expect(lock.extend(30_000)).rejects.toThrow();
    expect(b.dialogs).toEqual([]);
    expect(b.pageErrors).toEqual([]);
  });
});
