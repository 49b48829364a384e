/**
 * The orders database. `fence` is the highest fencing token that has written the
 * order: an INTEGER (64-bit, like the Redis counter the tokens come from).
 * `payments` is the ledger: a second row for one order is a double charge.
 * `stale_writes` records every write the fence refused, so the demo can count them
 * from the database instead of trusting the instances' logs.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS orders (
  id           INTEGER PRIMARY KEY,
  amount_cents INTEGER NOT NULL,
  status       TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'paid')),
  paid_by      TEXT,
  paid_at      TEXT,
  fence        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS payments (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  order_id     INTEGER NOT NULL REFERENCES orders(id),
  amount_cents INTEGER NOT NULL,
  instance     TEXT    NOT NULL,
  fence        INTEGER,
  created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS payments_by_order ON payments(order_id);
CREATE TABLE IF NOT EXISTS stale_writes (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  order_id      INTEGER NOT NULL,
  token         INTEGER NOT NULL,
  current_token INTEGER NOT NULL,
  instance      TEXT    NOT NULL,
  at            TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS job_runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job         TEXT NOT NULL,
  instance    TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  detail      TEXT NOT NULL
);
`;
