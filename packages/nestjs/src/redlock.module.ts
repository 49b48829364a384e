import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigurableRedlockModule } from './redlock.module-definition.js';
import { RedlockInstanceBinder } from './redlock-instance.binder.js';
import { RedlockService } from './redlock.service.js';

/**
 * Distributed locks for a Nest app. Provides and exports {@link RedlockService}; enables
 * `@WithLock` methods and `@LockRoute` handlers.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], isGlobal: true }),
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
  providers: [RedlockService, RedlockInstanceBinder],
  exports: [RedlockService],
})
export class RedlockModule extends ConfigurableRedlockModule {}
