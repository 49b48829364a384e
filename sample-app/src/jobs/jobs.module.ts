import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module.js';
import { LedgerReconciler } from './ledger-reconciler.js';
import { ReconcileJob } from './reconcile.job.js';

/** Scheduled jobs (scheduling itself comes from ScheduleModule.forRoot() in AppModule). */
@Module({
  imports: [OrdersModule],
  providers: [ReconcileJob, LedgerReconciler],
  exports: [ReconcileJob],
})
export class JobsModule {}
