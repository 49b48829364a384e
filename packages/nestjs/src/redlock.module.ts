import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigurableRedlockModule } from './redlock.module-definition.js';
import { redlockHttpProviders } from './redlock-http.providers.js';
import { RedlockInstanceBinder } from './redlock-instance.binder.js';
import { RedlockService } from './redlock.service.js';

/**
 * Distributed locks for a Nest app. Provides and exports {@link RedlockService}; enables
 * `@WithLock` methods and `@LockRoute` handlers. On HTTP routes, lock errors answer
 * 409/423 + `Retry-After`, 503 or 400 (never 500); `http: { global: true }` also locks
 * `@WithLock` handlers before their pipes run.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], isGlobal: true, http: { global: true } }),
 *     // or:
 *     RedlockModule.forRootAsync({
 *       isGlobal: true,
 *       imports: [ConfigModule],
 *       inject: [ConfigService],
 *       useFactory: (config: ConfigService) => ({ nodes: config.get('REDLOCK_NODES').split(',') }),
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RedlockService, RedlockInstanceBinder, ...redlockHttpProviders],
  exports: [RedlockService],
})
export class RedlockModule extends ConfigurableRedlockModule {}
