import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { AppConfig } from '../app/app-config.js';

/**
 * Which instance answered /health, and whether it serves payments with locks
 * (`LOCKS=off` is the demo's baseline). Always `up`: it only names the process.
 */
@Injectable()
export class InstanceIndicator {
  constructor(
    @Inject(HealthIndicatorService) private readonly indicators: HealthIndicatorService,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  describe<const Key extends string = 'instance'>(key: Key = 'instance' as Key): HealthIndicatorResult<Key> {
    return this.indicators.check(key).up({ id: this.config.instanceId, locks: this.config.locksEnabled });
  }
}
