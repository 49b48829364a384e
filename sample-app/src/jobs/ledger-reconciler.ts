import { Inject, Injectable } from '@nestjs/common';
import { OrdersRepository } from '../orders/orders.repository.js';
import type { LedgerReport } from '../orders/order.types.js';

/**
 * The work of the reconciliation job: checks the ledger against the orders. A provider
 * of its own so tests can replace it (for example with one that waits on a gate).
 */
@Injectable()
export class LedgerReconciler {
  constructor(@Inject(OrdersRepository) private readonly orders: OrdersRepository) {}

  async reconcile(): Promise<LedgerReport> {
    return this.orders.report();
  }
}
