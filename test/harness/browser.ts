/**
 * The lock dashboard in a real browser: Debian's Chromium driven by playwright-core, which
 * downloads no browser of its own. Shared by the dashboard's browser tests (a test app) and the
 * sample app's (the app as `npm start` runs it).
 */
import { execFileSync } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';

/** The page's DOM as the checks read it: they run in the browser, and the test program has no DOM lib. */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  querySelectorAll(selector: string): Iterable<PageElement>;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<PageElement> & { readonly length: number };
  querySelector(selector: string): PageElement | null;
};

/** The system Chromium. */
export function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is missing: apt-get install chromium (the dashboard browser tests drive the system Chromium)');
  }
}

/** A browser and one page, with what the page did that it should not have: dialogs, script errors. */
export interface DashboardBrowser {
  readonly browser: Browser;
  readonly page: Page;
  /** Messages of dialogs the page opened (each dismissed): an injected `alert` would land here. */
  readonly dialogs: string[];
  /** Uncaught errors of the page's script. */
  readonly pageErrors: string[];
}

/** Launches the system Chromium with one 1280 × 900 page. */
export async function openBrowser(): Promise<DashboardBrowser> {
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (err) => pageErrors.push(err.message));
  return { browser, page, dialogs, pageErrors };
}

/** The text of the row of `resource` in the locks table, found by its dataset (no selector escaping needed); null when absent. */
export function lockRowText(page: Page, resource: string): Promise<string | null> {
  return page.evaluate((r) => {
    const row = [...document.querySelectorAll('#locks tr')].find((tr) => tr.dataset.resource === r);
    return row ? row.textContent : null;
  }, resource);
}

/** The cells of the row of `resource` (resource, kind, holder, fencing token, ttl left, held on, waiters, action); null when absent. */
export function lockRowCells(page: Page, resource: string): Promise<Array<string | null> | null> {
  return page.evaluate((r) => {
    const row = [...document.querySelectorAll('#locks tr')].find((tr) => tr.dataset.resource === r);
    return row ? [...row.querySelectorAll('td')].map((td) => td.textContent) : null;
  }, resource);
}

/** Waits until the locks table has a row for `resource` whose text contains every one of `parts`. */
export async function waitForLockRow(page: Page, resource: string, ...parts: string[]): Promise<void> {
  await page.waitForFunction(
    ([r, want]) =>
      [...document.querySelectorAll('#locks tr')].some((tr) => tr.dataset.resource === r && want.every((p) => tr.textContent!.includes(p))),
    [resource, parts] as const,
  );
}

/** Waits until the locks table has no row for `resource`: a poll after its release. */
export async function waitForNoLockRow(page: Page, resource: string): Promise<void> {
  await page.waitForFunction((r) => ![...document.querySelectorAll('#locks tr')].some((tr) => tr.dataset.resource === r), resource);
}

/** Waits until the row of `resource` shows a fair queue of `length` waiters (the tickets after "fair queue:"). */
export async function waitForFairQueue(page: Page, resource: string, length: number): Promise<void> {
  await page.waitForFunction(
    ([r, n]) =>
      [...document.querySelectorAll('#locks tr')].some(
        (tr) => tr.dataset.resource === r && /fair queue: (.*)\)/.exec(tr.textContent!)?.[1]!.split('#').length === n + 1,
      ),
    [resource, length] as const,
  );
}

/** Waits until the nodes table lists `count` nodes, every one of them up; returns their labels in order. */
export async function waitForNodesUp(page: Page, count: number): Promise<Array<string | undefined>> {
  await page.waitForFunction(
    (n) => document.querySelectorAll('#nodes tr[data-status=up]').length === n && document.querySelectorAll('#nodes tr').length === n,
    count,
  );
  return page.evaluate(() => [...document.querySelectorAll('#nodes tr')].map((r) => r.dataset.node));
}

/** Waits until the page has finished `count` more polls than it had when this was called. */
export async function waitForPolls(page: Page, count: number): Promise<void> {
  const now = Number(await page.evaluate(() => document.querySelector('body')!.dataset.updates ?? '0'));
  await page.waitForFunction((n) => Number(document.querySelector('body')!.dataset.updates ?? '0') >= n, now + count);
}
