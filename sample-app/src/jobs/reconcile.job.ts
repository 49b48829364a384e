import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { WithLock } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { OrdersRepository } from '../orders/orders.repository.js';
import type { JobRun } from '../orders/order.types.js';
import { LedgerReconciler } from './ledger-reconciler.js';

/**
 * The schedule, read from RECONCILE_CRON when the class loads (decorators are evaluated
 * then); "off" registers the job without starting it. Default: every 10 seconds.
 */
const SCHEDULE = process.env.RECONCILE_CRON?.trim() || '*/10 * * * * *';

/**
 * Every instance schedules this job; the lock makes only one of them run it at a time.
 * The others skip that tick (`onLocked: 'skip'`) instead of waiting and running late.
 */
@Injectable()
export class ReconcileJob {
  private readonly logger = new Logger('ReconcileJob');

  constructor(
    @Inject(LedgerReconciler) private readonly reconciler: LedgerReconciler,
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  /** Resolves to the recorded run, or `undefined` when another instance was running it. */
  // waitForCompletion: no overlapping runs inside one instance either. threshold: a busy
  // instance still runs a late tick instead of dropping it (the lock prevents overlap).
  @Cron(SCHEDULE === 'off' ? '0 0 1 1 *' : SCHEDULE, {
    name: 'reconcile',
    disabled: SCHEDULE === 'off',
    waitForCompletion: true,
    threshold: 2_000,
  })
  @WithLock('job:reconcile', { onLocked: 'skip', ttl: 30_000 })
  async run(): Promise<JobRun> {
    const startedAt = new Date().toISOString();
    const report = await this.reconciler.reconcile();
    const run: JobRun = {
      job: 'reconcile',
      instance: this.config.instanceId,
      startedAt,
      finishedAt: new Date().toISOString(),
      detail: JSON.stringify(report),
    };
    this.orders.recordJobRun(run);
    if (report.paidTwice > 0) this.logger.error(`${report.paidTwice} order(s) were paid twice`);
    return run;
  }
}
