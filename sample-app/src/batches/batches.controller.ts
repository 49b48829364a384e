import { Controller, Get, Inject, Param, Post } from '@nestjs/common';
import { setImmediate as yieldOnce } from 'node:timers/promises';
import { LockRoute } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { BatchRunsStore, type BatchRun } from './batch-runs.store.js';

/**
 * Batch jobs, one at a time per queue across all instances, in order of arrival:
 * `POST /batches/:queue/:job` holds the fair lock `batch:<queue>` for the whole request
 * (`fair: true`). A job submitted while another runs waits (up to 30 s) in a FIFO queue kept
 * on the Redis nodes, so jobs run in the order they were submitted, whichever instance took
 * them; without `fair`, whichever waiter retries first after a release would win.
 */
@Controller('batches')
export class BatchesController {
  constructor(
    @Inject(BatchRunsStore) private readonly runs: BatchRunsStore,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  @Post(':queue/:job')
  @LockRoute('batch:<queue>', { fair: true, wait: 30_000 })
  async run(@Param('queue') queue: string, @Param('job') job: string): Promise<BatchRun> {
    const startedAt = new Date().toISOString();
    await yieldOnce(); // the job's work
    return this.runs.record({ queue, job, instance: this.config.instanceId, startedAt, finishedAt: new Date().toISOString() });
  }

  /** The jobs that ran in a queue, in the order they ran. */
  @Get(':queue')
  list(@Param('queue') queue: string): BatchRun[] {
    return this.runs.runs(queue);
  }
}
