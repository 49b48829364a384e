import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockHealthIndicator } from './redlock-health.indicator.js';

/**
 * Provides {@link RedlockHealthIndicator} (and terminus' `HealthCheckService`) to the module that
 * imports it. Needs `RedlockService`: import `RedlockModule.forRoot({ ..., isGlobal: true })` in
 * the app, or list the indicator in a module that imports `RedlockModule` itself.
 *
 * @example
 * ```ts
 * @Module({ imports: [RedlockHealthModule], controllers: [HealthController] })
 * export class HealthModule {}
 * ```
 */
@Module({
  imports: [TerminusModule],
  providers: [RedlockHealthIndicator],
  exports: [RedlockHealthIndicator, TerminusModule],
})
export class RedlockHealthModule {}
