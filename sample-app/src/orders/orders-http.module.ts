import { Module, type DynamicModule } from '@nestjs/common';
import type { AppConfig } from '../app/app-config.js';
import { OrdersController } from './orders.controller.js';
import { OrdersModule } from './orders.module.js';
import { UnlockedOrdersController } from './unlocked-orders.controller.js';

/**
 * The /orders routes. The controller is chosen once, from the configuration: the
 * locked one, or (LOCKS=off, the demo's baseline only) the same routes without locks.
 */
@Module({})
export class OrdersHttpModule {
  static forConfig(config: AppConfig): DynamicModule {
    return {
      module: OrdersHttpModule,
      imports: [OrdersModule],
      controllers: [config.locksEnabled ? OrdersController : UnlockedOrdersController],
    };
  }
}
