import type Database from 'better-sqlite3';
import { StaleFencingTokenError } from '@redlock-nest/core';
import { OrderNotFoundError, type JobRun, type LedgerReport, type Order, type Payment } from './order.types.js';
import { SCHEMA } from './schema.js';
import { openSharedDatabase } from './shared-database.js';

/** The lock resource (and fencing resource) of an order. */
export function orderResource(orderId: number): string {
  return `order:${orderId}`;
}

interface OrderRow {
  id: number;
  amount_cents: number;
  status: 'open' | 'paid';
  paid_by: string | null;
  fence: bigint;
}

type CaptureOutcome = { kind: 'paid'; payment: Payment } | { kind: 'stale'; current: bigint } | { kind: 'missing' };

/**
 * The orders database: one SQLite file (WAL mode) shared by every instance.
 *
 * Fencing tokens are stored as SQLite INTEGER (64-bit signed, the same range as the
 * Redis INCR counter they come from), bound as BigInt and read back with
 * `safeIntegers`, so tokens above 2^53 keep every digit.
 *
 * The capture is the fenced write: `UPDATE … SET fence = @token WHERE id = @id AND
 * fence <= @token`. An equal token is the same lock holder writing again; a lower one
 * means the writer's lock expired (it was paused) and a newer holder has written: the
 * write is refused, recorded in `stale_writes`, and raised as `StaleFencingTokenError`.
 */
export class OrdersRepository {
  private readonly db: Database.Database;
  private readonly findStmt: Database.Statement;
  private readonly fencedUpdate: Database.Statement;
  private readonly blindUpdate: Database.Statement;
  private readonly insertPayment: Database.Statement;
  private readonly insertStale: Database.Statement;
  private readonly captureTx: (orderId: number, token: bigint | undefined, instance: string) => CaptureOutcome;

  constructor(readonly file: string) {
    this.db = openSharedDatabase(file, SCHEMA);
    this.db.pragma('synchronous = NORMAL');
    this.findStmt = this.db.prepare('SELECT id, amount_cents, status, paid_by, fence FROM orders WHERE id = ?').safeIntegers(true);
    this.fencedUpdate = this.db.prepare(
      `UPDATE orders SET status = 'paid', paid_by = @instance, paid_at = @at, fence = @token
       WHERE id = @id AND fence <= @token`,
    );
    // The baseline without locks: a plain last-writer-wins update.
    this.blindUpdate = this.db.prepare(`UPDATE orders SET status = 'paid', paid_by = @instance, paid_at = @at WHERE id = @id`);
    this.insertPayment = this.db.prepare(
      `INSERT INTO payments (order_id, amount_cents, instance, fence, created_at)
       SELECT id, amount_cents, @instance, @token, @at FROM orders WHERE id = @id`,
    );
    this.insertStale = this.db.prepare('INSERT INTO stale_writes (order_id, token, current_token, instance, at) VALUES (?, ?, ?, ?, ?)');
    const tx = this.db.transaction((orderId: number, token: bigint | undefined, instance: string): CaptureOutcome => {
      const at = new Date().toISOString();
      const params = { id: orderId, token: token ?? null, instance, at };
      const update = token === undefined ? this.blindUpdate : this.fencedUpdate;
      if (update.run(params).changes === 0) {
        const row = this.findStmt.get(orderId) as OrderRow | undefined;
        if (!row) return { kind: 'missing' };
        this.insertStale.run(orderId, token, row.fence, instance, at);
        return { kind: 'stale', current: row.fence };
      }
      const id = Number(this.insertPayment.run(params).lastInsertRowid);
      const row = this.findStmt.get(orderId) as OrderRow;
      return {
        kind: 'paid',
        payment: { id, orderId, amountCents: Number(row.amount_cents), instance, fence: token ?? null },
      };
    });
    // IMMEDIATE takes the write lock at BEGIN, so busy_timeout applies (a deferred
    // transaction upgrading its lock would fail at once with SQLITE_BUSY).
    this.captureTx = (orderId, token, instance) => tx.immediate(orderId, token, instance);
  }

  /** Creates orders 1..count (amounts 10.00–99.99), keeping existing ones. */
  seed(count: number): void {
    const insert = this.db.prepare('INSERT OR IGNORE INTO orders (id, amount_cents) VALUES (?, ?)');
    this.db.transaction(() => {
      for (let id = 1; id <= count; id++) insert.run(id, 1_000 + ((id * 7_919) % 9_000));
    })();
  }

  find(orderId: number): Order | undefined {
    const row = this.findStmt.get(orderId) as OrderRow | undefined;
    return row && toOrder(row);
  }

  /** Every order, by id (what the CSV export writes). */
  list(): Order[] {
    const rows = this.db
      .prepare('SELECT id, amount_cents, status, paid_by, fence FROM orders ORDER BY id')
      .safeIntegers(true)
      .all() as OrderRow[];
    return rows.map(toOrder);
  }

  /**
   * Captures the payment of an order: marks it paid and appends the ledger row, in one
   * transaction. With a token the write is fenced; without (locks off) it is blind.
   *
   * @throws {StaleFencingTokenError} the order has already been written with a newer token.
   * @throws {OrderNotFoundError}
   */
  capture(orderId: number, instance: string, token: bigint | undefined): Payment {
    const outcome = this.captureTx(orderId, token, instance);
    if (outcome.kind === 'missing') throw new OrderNotFoundError(orderId);
    if (outcome.kind === 'stale') {
      throw new StaleFencingTokenError({ resource: orderResource(orderId), token: token!, currentToken: outcome.current });
    }
    return outcome.payment;
  }

  /** The payment rows of an order (more than one = paid twice). */
  paymentsOf(orderId: number): Payment[] {
    const rows = this.db
      .prepare('SELECT id, order_id, amount_cents, instance, fence FROM payments WHERE order_id = ? ORDER BY id')
      .safeIntegers(true)
      .all(orderId) as Array<{ id: bigint; order_id: bigint; amount_cents: bigint; instance: string; fence: bigint | null }>;
    return rows.map((r) => ({
      id: Number(r.id),
      orderId: Number(r.order_id),
      amountCents: Number(r.amount_cents),
      instance: r.instance,
      fence: r.fence,
    }));
  }

  /** The correctness figures, straight from the tables. */
  report(): LedgerReport {
    const one = (sql: string): number => (this.db.prepare(sql).pluck().get() as number | null) ?? 0;
    return {
      orders: one('SELECT COUNT(*) FROM orders'),
      paidOrders: one(`SELECT COUNT(*) FROM orders WHERE status = 'paid'`),
      payments: one('SELECT COUNT(*) FROM payments'),
      paidTwice: one('SELECT COUNT(*) FROM (SELECT order_id FROM payments GROUP BY order_id HAVING COUNT(*) > 1)'),
      staleWritesRejected: one('SELECT COUNT(*) FROM stale_writes'),
    };
  }

  recordJobRun(run: JobRun): void {
    this.db
      .prepare('INSERT INTO job_runs (job, instance, started_at, finished_at, detail) VALUES (?, ?, ?, ?, ?)')
      .run(run.job, run.instance, run.startedAt, run.finishedAt, run.detail);
  }

  jobRuns(job: string): JobRun[] {
    const rows = this.db
      .prepare('SELECT job, instance, started_at, finished_at, detail FROM job_runs WHERE job = ? ORDER BY id')
      .all(job) as Array<{ job: string; instance: string; started_at: string; finished_at: string; detail: string }>;
    return rows.map((r) => ({
      job: r.job,
      instance: r.instance,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      detail: r.detail,
    }));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function toOrder(row: OrderRow): Order {
  return {
    id: Number(row.id),
    amountCents: Number(row.amount_cents),
    status: row.status,
    paidBy: row.paid_by,
    fence: BigInt(row.fence),
  };
}
