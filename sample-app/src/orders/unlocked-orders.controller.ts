import { Controller, Param, ParseIntPipe, Post, Res } from '@nestjs/common';
import type { PaymentResult } from '../payments/payment.types.js';
import { OrdersController, type StatusResponse } from './orders.controller.js';

/**
 * The same routes with no lock and no fence: only `pay` differs (no `@LockRoute`, and the
 * service's unlocked, unfenced path). Registered only with LOCKS=off, for
 * `npm run demo -- --no-locks`, to show the double charges the locked version prevents.
 * Never use this shape in a real service.
 */
@Controller('orders')
export class UnlockedOrdersController extends OrdersController {
  @Post(':id/pay')
  override async pay(@Param('id', ParseIntPipe) id: number, @Res({ passthrough: true }) res: StatusResponse): Promise<PaymentResult> {
    const result = await this.payments.payUnlocked(id);
    if (result.status === 'already-paid') res.status(200);
    return result;
  }
}
