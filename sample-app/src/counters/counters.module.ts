import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';
import { CohortStats } from './cohort-stats.js';
import { CountersController } from './counters.controller.js';
import { HotCounterStore } from './hot-counter.store.js';

/** A hot key under a plain lock, where lock cohorting hands the lock over inside the process. */
@Module({
  providers: [
    { provide: HotCounterStore, useFactory: (config: AppConfig) => new HotCounterStore(config.ordersDb), inject: [AppConfig] },
    CohortStats,
  ],
  controllers: [CountersController],
})
export class CountersModule implements OnApplicationShutdown {
  constructor(@Inject(HotCounterStore) private readonly store: HotCounterStore) {}

  onApplicationShutdown(): void {
    this.store.close();
  }
}
