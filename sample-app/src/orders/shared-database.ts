import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/**
 * Opens the SQLite file the sample's stores share (orders, catalog, batch runs, counters), shared
 * by every instance, and creates `schema`'s tables if missing.
 */
export function openSharedDatabase(file: string, schema: string): Database.Database {
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  // WAL: readers never block the writer, and three processes can share the file.
  db.pragma('journal_mode = WAL');
  // Writers from other instances queue for the write lock instead of failing with SQLITE_BUSY.
  db.pragma('busy_timeout = 10000');
  db.exec(schema);
  return db;
}
