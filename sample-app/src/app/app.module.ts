import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { EtcdLocks } from '@redlock-nest/etcd';
import { RedlockDashboardModule, RedlockModule } from '@redlock-nest/nestjs';
import { BatchesModule } from '../batches/batches.module.js';
import { CatalogModule } from '../catalog/catalog.module.js';
import { CountersModule } from '../counters/counters.module.js';
import { DASHBOARD_PATH, DashboardAccessGuard } from '../dashboard/dashboard-access.guard.js';
import { ExportsModule } from '../exports/exports.module.js';
import { HealthModule } from '../health/health.module.js';
import { JobsModule } from '../jobs/jobs.module.js';
import { LockEventsModule } from '../lock-events/lock-events.module.js';
import { OrdersHttpModule } from '../orders/orders-http.module.js';
import { LockErrorsFilter } from '../payments/lock-errors.filter.js';
import { PricesModule } from '../prices/prices.module.js';
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
          useFactory: (c: AppConfig) => {
            // Default TTL of @LockRoute / @WithLock; the watchdog extends it while the request runs.
            const shared = { ttl: c.paymentLockTtlMs, lockedStatus: 409 } as const;
            // On etcd the same decorators lock through consensus; the engine's own request
            // timeout (1 s) covers a slow fsync, which a Redis node timeout would not.
            if (c.lockEngine === 'etcd') return { ...shared, engine: new EtcdLocks({ hosts: c.etcdHosts }) };
            return {
              ...shared,
              nodes: c.nodes,
              nodeTimeoutMs: c.nodeTimeoutMs,
              // Refuse to start on a replica or a server listed twice: Redlock would be unsafe.
              independenceCheck: 'fail' as const,
              // Lock cohorting (the default, spelled out): a plain lock released while another
              // request of this process waits for the same key goes to it locally, the keys
              // staying on the nodes; at most 16 hand-offs or 100 ms in a row while other
              // processes wait. The hot counter (src/counters/) is where it shows.
              cohort: { maxHandoffs: 16, maxHoldMs: 100 },
            };
          },
        }),
        ScheduleModule.forRoot(),
        OrdersHttpModule.forConfig(config),
        JobsModule,
        CatalogModule,
        ExportsModule,
        BatchesModule,
        PricesModule,
        CountersModule,
        HealthModule,
        LockEventsModule,
        // The live lock dashboard, read-only, behind DashboardAccessGuard: loopback only unless
        // DASHBOARD_TOKEN is set (never `public: true`, see the guard). DASHBOARD=off leaves it out.
        ...(config.dashboard ? [RedlockDashboardModule.forRoot({ path: DASHBOARD_PATH, guard: DashboardAccessGuard })] : []),
      ],
      // RedlockExceptionFilter, with stale writes marked for the demo (see LockErrorsFilter).
      providers: [{ provide: APP_FILTER, useClass: LockErrorsFilter }],
    };
  }
}
