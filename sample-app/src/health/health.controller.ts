import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { RedlockHealthIndicator } from '@redlock-nest/nestjs/health';
import { AppConfig } from '../app/app-config.js';
import { InstanceIndicator } from './instance.indicator.js';

/**
 * GET /health, a terminus health check:
 * - `redlock`: each lock node's state, latency and role. `up` when every node can lock,
 *   `degraded` (still 200) when some cannot but a quorum can, `down` (503) without a quorum:
 *   payments then answer 503 too. A replica shows as a `slave` node that does not count.
 * - `instance`: this process' id and whether locks are on.
 */
@Controller('health')
export class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(RedlockHealthIndicator) private readonly redlock: RedlockHealthIndicator,
    @Inject(InstanceIndicator) private readonly instance: InstanceIndicator,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([
      // The lock client's own per-node timeout: a node too slow for a lock is too slow here.
      () => this.redlock.isHealthy('redlock', { timeoutMs: this.config.nodeTimeoutMs }),
      () => this.instance.describe('instance'),
    ]);
  }
}
