import { Controller, Get, Inject, NotFoundException, Param, ParseIntPipe, Post, Res } from '@nestjs/common';
import { LockRoute } from '@redlock-nest/nestjs';
import { PaymentsService } from '../payments/payments.service.js';
import type { PaymentResult } from '../payments/payment.types.js';
import { OrdersRepository } from './orders.repository.js';
import { toOrderView, type OrderView } from './order.view.js';

/** The part of the platform response the handler touches (Express or Fastify). */
export interface StatusResponse {
  status(code: number): unknown;
}

/**
 * Orders over HTTP. `POST /orders/:id/pay` is locked per order for the whole request:
 * a second concurrent payment of the same order is answered at once with 409 and
 * `Retry-After` instead of queueing (or worse, running).
 */
@Controller('orders')
export class OrdersController {
  constructor(
    @Inject(OrdersRepository) protected readonly orders: OrdersRepository,
    @Inject(PaymentsService) protected readonly payments: PaymentsService,
  ) {}

  @Get(':id')
  get(@Param('id', ParseIntPipe) id: number): OrderView {
    const order = this.orders.find(id);
    if (!order) throw new NotFoundException(`Order ${id} does not exist.`);
    return toOrderView(order, this.orders.paymentsOf(id));
  }

  @Post(':id/pay')
  @LockRoute('order:<id>', { fencing: true })
  async pay(@Param('id', ParseIntPipe) id: number, @Res({ passthrough: true }) res: StatusResponse): Promise<PaymentResult> {
    const result = await this.payments.pay(id);
    // 201: this request charged the order; 200: it was already paid (idempotent retry).
    if (result.status === 'already-paid') res.status(200);
    return result;
  }
}
