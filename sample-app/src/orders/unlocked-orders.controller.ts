import { Controller, Get, Inject, NotFoundException, Param, ParseIntPipe, Post, Res } from '@nestjs/common';
import { PaymentsService } from '../payments/payments.service.js';
import type { PaymentResult } from '../payments/payment.types.js';
import { OrdersRepository } from './orders.repository.js';
import { toOrderView, type OrderView } from './order.view.js';

interface StatusResponse {
  status(code: number): unknown;
}

/**
 * The same routes with no lock and no fence. Registered only with LOCKS=off, for
 * `npm run demo -- --no-locks`, to show the double charges the locked version prevents.
 * Never use this shape in a real service.
 */
@Controller('orders')
export class UnlockedOrdersController {
  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(PaymentsService) private readonly payments: PaymentsService,
  ) {}

  @Get(':id')
  get(@Param('id', ParseIntPipe) id: number): OrderView {
    const order = this.orders.find(id);
    if (!order) throw new NotFoundException(`Order ${id} does not exist.`);
    return toOrderView(order, this.orders.paymentsOf(id));
  }

  @Post(':id/pay')
  async pay(@Param('id', ParseIntPipe) id: number, @Res({ passthrough: true }) res: StatusResponse): Promise<PaymentResult> {
    const result = await this.payments.payUnlocked(id);
    if (result.status === 'already-paid') res.status(200);
    return result;
  }
}
