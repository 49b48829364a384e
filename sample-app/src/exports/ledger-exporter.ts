import { Inject, Injectable } from '@nestjs/common';
import { setImmediate as yieldOnce } from 'node:timers/promises';
import { OrdersRepository } from '../orders/orders.repository.js';

/**
 * Renders a tenant's orders as CSV: the expensive part of an export (in a real service, a
 * large query and an upload). This sample has one set of orders, so every tenant gets the
 * same rows; the tenant only names the export quota. A provider of its own so tests can
 * hold an export open.
 */
@Injectable()
export class LedgerExporter {
  constructor(@Inject(OrdersRepository) private readonly orders: OrdersRepository) {}

  async render(tenantId: string): Promise<string> {
    const lines = ['tenant,order,amount_cents,status,paid_by'];
    for (const o of this.orders.list()) {
      await yieldOnce(); // let other requests run between rows, as a streamed query would
      lines.push([tenantId, o.id, o.amountCents, o.status, o.paidBy ?? ''].join(','));
    }
    return `${lines.join('\n')}\n`;
  }
}
