import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';
import { BatchesController } from './batches.controller.js';
import { BatchRunsStore } from './batch-runs.store.js';

/** Batch jobs under a fair lock per queue (see BatchesController). */
@Module({
  providers: [{ provide: BatchRunsStore, useFactory: (config: AppConfig) => new BatchRunsStore(config.ordersDb), inject: [AppConfig] }],
  controllers: [BatchesController],
})
export class BatchesModule implements OnApplicationShutdown {
  constructor(@Inject(BatchRunsStore) private readonly runs: BatchRunsStore) {}

  onApplicationShutdown(): void {
    this.runs.close();
  }
}
