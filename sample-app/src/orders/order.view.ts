import type { Order, Payment } from './order.types.js';

/** An order as JSON (bigint tokens as decimal strings). */
export interface OrderView {
  readonly id: number;
  readonly amountCents: number;
  readonly status: Order['status'];
  readonly paidBy: string | null;
  readonly fence: string;
  readonly payments: ReadonlyArray<{ id: number; instance: string; fence: string | null }>;
}

export function toOrderView(order: Order, payments: readonly Payment[]): OrderView {
  return {
    id: order.id,
    amountCents: order.amountCents,
    status: order.status,
    paidBy: order.paidBy,
    fence: String(order.fence),
    payments: payments.map((p) => ({ id: p.id, instance: p.instance, fence: p.fence === null ? null : String(p.fence) })),
  };
}
