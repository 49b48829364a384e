import { setImmediate as yieldOnce } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { openSharedDatabase } from '../orders/shared-database.js';

/** A catalog entry and the price history that must match it. */
export interface CatalogItem {
  readonly sku: string;
  readonly priceCents: number;
  /** Bumped by every price change; `history` has one row per version. */
  readonly version: number;
  readonly history: ReadonlyArray<{ version: number; priceCents: number; by: string }>;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS catalog_items (
  sku         TEXT    PRIMARY KEY,
  price_cents INTEGER NOT NULL,
  version     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS catalog_history (
  sku         TEXT    NOT NULL,
  version     INTEGER NOT NULL,
  price_cents INTEGER NOT NULL,
  by          TEXT    NOT NULL,
  PRIMARY KEY (sku, version)
);
`;

/**
 * The catalog, in the same SQLite file as the orders. A price change is two separate writes
 * (the item, then its history row) on purpose: in a real service they are two systems (a
 * database and a search index, a cache) that no transaction spans. The read-write lock of
 * `CatalogService` is what keeps readers from seeing one without the other, across instances.
 *
 * Async like a remote store would be (and so tests can hold a call inside the lock).
 */
export class CatalogStore {
  private readonly db: Database.Database;

  constructor(readonly file: string) {
    this.db = openSharedDatabase(file, SCHEMA);
  }

  /** Creates sku-1..sku-count at version 1, keeping existing ones. */
  seed(count: number): void {
    const item = this.db.prepare('INSERT OR IGNORE INTO catalog_items (sku, price_cents, version) VALUES (?, ?, 1)');
    const row = this.db.prepare(`INSERT OR IGNORE INTO catalog_history (sku, version, price_cents, by) VALUES (?, 1, ?, 'seed')`);
    this.db.transaction(() => {
      for (let i = 1; i <= count; i++) {
        const price = 500 + ((i * 389) % 4_500);
        item.run(`sku-${i}`, price);
        row.run(`sku-${i}`, price);
      }
    })();
  }

  async read(sku: string): Promise<CatalogItem | undefined> {
    const item = this.db.prepare('SELECT sku, price_cents, version FROM catalog_items WHERE sku = ?').get(sku) as
      { sku: string; price_cents: number; version: number } | undefined;
    if (!item) return undefined;
    await yieldOnce(); // the second system's round trip
    const history = this.db
      .prepare('SELECT version, price_cents, by FROM catalog_history WHERE sku = ? ORDER BY version')
      .all(sku) as Array<{ version: number; price_cents: number; by: string }>;
    return {
      sku: item.sku,
      priceCents: item.price_cents,
      version: item.version,
      history: history.map((h) => ({ version: h.version, priceCents: h.price_cents, by: h.by })),
    };
  }

  /** Writes the new price, then its history row: two steps, not atomic (see the class comment). */
  async write(sku: string, priceCents: number, version: number, by: string): Promise<void> {
    this.db.prepare('UPDATE catalog_items SET price_cents = ?, version = ? WHERE sku = ?').run(priceCents, version, sku);
    await yieldOnce();
    this.db.prepare('INSERT INTO catalog_history (sku, version, price_cents, by) VALUES (?, ?, ?, ?)').run(sku, version, priceCents, by);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
