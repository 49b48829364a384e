import { setImmediate as yieldOnce } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { openSharedDatabase } from '../orders/shared-database.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS hot_counters (
  name  TEXT    PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

/**
 * Counters in the orders' SQLite file. An increment is a read, then a write of value + 1, on
 * purpose not one statement: two increments that overlap lose one (a lost update), so the final
 * value counts how many increments really ran one at a time.
 */
export class HotCounterStore {
  private readonly db: Database.Database;

  constructor(readonly file: string) {
    this.db = openSharedDatabase(file, SCHEMA);
  }

  value(name: string): number {
    const row = this.db.prepare('SELECT value FROM hot_counters WHERE name = ?').get(name) as { value: number } | undefined;
    return row?.value ?? 0;
  }

  /** Read, a round trip, write: safe only under the counter's lock. Returns the new value. */
  async increment(name: string): Promise<number> {
    const next = this.value(name) + 1;
    await yieldOnce();
    this.db
      .prepare('INSERT INTO hot_counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value')
      .run(name, next);
    return next;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
