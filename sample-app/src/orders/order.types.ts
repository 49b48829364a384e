/** An order as stored in the orders database. */
export interface Order {
  readonly id: number;
  readonly amountCents: number;
  readonly status: 'open' | 'paid';
  readonly paidBy: string | null;
  /** Highest fencing token that has written this order (0 = never written under a lock). */
  readonly fence: bigint;
}

/** One captured payment (a row of the ledger: two rows for one order = a double charge). */
export interface Payment {
  readonly id: number;
  readonly orderId: number;
  readonly amountCents: number;
  readonly instance: string;
  /** The fencing token of the write, or null when written without a lock (demo baseline). */
  readonly fence: bigint | null;
}

/** What the database says about correctness: the demo's final check. */
export interface LedgerReport {
  readonly orders: number;
  readonly paidOrders: number;
  readonly payments: number;
  /** Orders with more than one payment row: must be 0. */
  readonly paidTwice: number;
  /** Writes refused because their fencing token was older than the order's. */
  readonly staleWritesRejected: number;
}

/** One run of a scheduled job, recorded by whichever instance ran it. */
export interface JobRun {
  readonly job: string;
  readonly instance: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly detail: string;
}

/** The order does not exist. */
export class OrderNotFoundError extends Error {
  override name = 'OrderNotFoundError';
  constructor(readonly orderId: number) {
    super(`Order ${orderId} does not exist.`);
  }
}
