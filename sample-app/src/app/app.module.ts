import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from '@redlock-nest/nestjs';
import { BatchesModule } from '../batches/batches.module.js';
import { CatalogModule } from '../catalog/catalog.module.js';
import { ExportsModule } from '../exports/exports.module.js';
import { HealthModule } from '../health/health.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { LockEventsModule } from '../lock-events/lock-events.module.js';
import { OrdersHttpModule } from '../orders/orders-http.module.js';
import { LockErrorsFilter } from '../payments/lock-errors.filter.js';
import { AppConfig } from './app-config.js';
import { AppConfigModule } from './app-config.module.js';

/** The orders and payments service. Built from an {@link AppConfig} (see loadConfig). */
@Module({})
export class AppModule {
  static forConfig(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forConfig(config),
        RedlockModule.forRootAsync({
          isGlobal: true,
          inject: [AppConfig],
          useFactory: (c: AppConfig) => ({
            nodes: c.nodes,
            // Default TTL of @LockRoute / @WithLock; the watchdog extends it while the request runs.
            ttl: c.paymentLockTtlMs,
            nodeTimeoutMs: c.nodeTimeoutMs,
            lockedStatus: 409,
            // Refuse to start on a replica or a server listed twice: Redlock would be unsafe.
            independenceCheck: 'fail',
          }),
        }),
        ScheduleModule.forRoot(),
        OrdersHttpModule.forConfig(config),
        JobsModule,
        CatalogModule,
        ExportsModule,
        BatchesModule,
        HealthModule,
        LockEventsModule,
      ],
      // RedlockExceptionFilter, with stale writes marked for the demo (see LockErrorsFilter).
      providers: [{ provide: APP_FILTER, useClass: LockErrorsFilter }],
    };
  }
}
