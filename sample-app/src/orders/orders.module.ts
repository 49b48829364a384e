import { Inject, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';
import { CardAuthorizer } from '../payments/card-authorizer.js';
import { DemoFreezeHook } from '../payments/demo-freeze.hook.js';
import { PaymentsService } from '../payments/payments.service.js';
import { OrdersRepository } from './orders.repository.js';

/** The orders database and the payment logic (HTTP routes live in OrdersHttpModule). */
@Module({
  providers: [
    {
      provide: OrdersRepository,
      useFactory: (config: AppConfig) => new OrdersRepository(config.ordersDb),
      inject: [AppConfig],
    },
    PaymentsService,
    CardAuthorizer,
    DemoFreezeHook,
  ],
  exports: [OrdersRepository, PaymentsService],
})
export class OrdersModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    if (this.config.seedOrders > 0) this.orders.seed(this.config.seedOrders);
  }

  onApplicationShutdown(): void {
    this.orders.close();
  }
}
