import type Database from 'better-sqlite3';
import { openSharedDatabase } from '../orders/shared-database.js';

/** One batch job that ran: in which queue, on which instance, in which order. */
export interface BatchRun {
  readonly seq: number;
  readonly queue: string;
  readonly job: string;
  readonly instance: string;
  readonly startedAt: string;
  readonly finishedAt: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS batch_runs (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  queue       TEXT NOT NULL,
  job         TEXT NOT NULL,
  instance    TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  finished_at TEXT NOT NULL
);
`;

/** The log of batch runs, in the same SQLite file as the orders (shared by every instance). */
export class BatchRunsStore {
  private readonly db: Database.Database;

  constructor(readonly file: string) {
    this.db = openSharedDatabase(file, SCHEMA);
  }

  record(run: Omit<BatchRun, 'seq'>): BatchRun {
    const info = this.db
      .prepare('INSERT INTO batch_runs (queue, job, instance, started_at, finished_at) VALUES (?, ?, ?, ?, ?)')
      .run(run.queue, run.job, run.instance, run.startedAt, run.finishedAt);
    return { seq: Number(info.lastInsertRowid), ...run };
  }

  runs(queue: string): BatchRun[] {
    const rows = this.db
      .prepare('SELECT seq, queue, job, instance, started_at, finished_at FROM batch_runs WHERE queue = ? ORDER BY seq')
      .all(queue) as Array<{ seq: number; queue: string; job: string; instance: string; started_at: string; finished_at: string }>;
    return rows.map((r) => ({
      seq: r.seq,
      queue: r.queue,
      job: r.job,
      instance: r.instance,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
    }));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
