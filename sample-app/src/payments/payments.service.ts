import { Inject, Injectable, NotFoundException } from '@nestjs/common';
import { currentLock, WithLock } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { orderResource, OrdersRepository } from '../orders/orders.repository.js';
import { CardAuthorizer } from './card-authorizer.js';
import { DemoFreezeHook } from './demo-freeze.hook.js';
import type { PaymentResult } from './payment.types.js';

/**
 * Pays orders. `pay` runs under the order's lock with a fencing token; the capture is
 * a fenced write, so even a holder whose lock silently expired (a long pause) cannot
 * charge an order twice: its late write carries an older token and is refused.
 */
@Injectable()
export class PaymentsService {
  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(CardAuthorizer) private readonly authorizer: CardAuthorizer,
    @Inject(DemoFreezeHook) private readonly freeze: DemoFreezeHook,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  /**
   * Called from the locked route, this reuses the route's lock (reentrant, one
   * acquisition per request); called from anywhere else, it acquires the lock itself.
   *
   * @throws {StaleFencingTokenError} this holder's lock expired and a newer holder wrote.
   * @throws {LockLostError} the lock was known to be lost before the capture.
   */
  @WithLock('order:<orderId>', { fencing: true })
  async pay(orderId: number): Promise<PaymentResult> {
    const lock = currentLock(orderResource(orderId));
    if (lock?.fencingToken === undefined) {
      // A lock without a token cannot protect the write; refuse rather than write unfenced.
      throw new Error(`pay(${orderId}) ran without a fencing token: lock ${orderResource(orderId)} with { fencing: true }.`);
    }
    return this.payOnce(orderId, lock.fencingToken, lock.signal);
  }

  /** The same payment without lock or fence: the baseline the demo runs with --no-locks. */
  payUnlocked(orderId: number): Promise<PaymentResult> {
    return this.payOnce(orderId, undefined, undefined);
  }

  private async payOnce(orderId: number, token: bigint | undefined, signal: AbortSignal | undefined): Promise<PaymentResult> {
    const order = this.orders.find(orderId);
    if (!order) throw new NotFoundException(`Order ${orderId} does not exist.`);
    if (order.status === 'paid') return { status: 'already-paid', orderId, paidBy: order.paidBy };
    await this.authorizer.authorize(order.amountCents, signal);
    // Last check the holder can make. It catches a lock known to be lost, but not a
    // pause that starts right after it: that is what the fence is for.
    signal?.throwIfAborted();
    this.freeze.beforeCapture(orderId, token);
    const payment = this.orders.capture(orderId, this.config.instanceId, token);
    return {
      status: 'paid',
      orderId,
      paymentId: payment.id,
      amountCents: payment.amountCents,
      instance: payment.instance,
      fence: token === undefined ? null : String(token),
    };
  }
}
