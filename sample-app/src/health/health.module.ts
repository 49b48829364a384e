import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockHealthModule } from '@redlock-nest/nestjs/health';
import { HealthController } from './health.controller.js';
import { InstanceIndicator } from './instance.indicator.js';

/** GET /health (RedlockHealthIndicator needs RedlockService, which the global RedlockModule provides). */
@Module({
  imports: [TerminusModule, RedlockHealthModule],
  controllers: [HealthController],
  providers: [InstanceIndicator],
})
export class HealthModule {}
