import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RedlockArgumentError } from '@redlock-nest/core';
import { DEFAULT_REDLOCK_NAME, REDLOCK_INSTANCE_NAME, REDLOCK_LOCAL_SERVICE } from '../options/constants.js';
import { getRedlockServiceToken } from './inject-redlock.decorator.js';
import {
  ConfigurableRedlockModule,
  type RedlockModuleAsyncOptions,
  type RedlockModuleForRootOptions,
} from '../options/redlock.module-definition.js';
import { redlockHttpProviders } from './redlock-http.providers.js';
import { RedlockInstanceBinder } from './redlock-instance.binder.js';
import { RedlockService } from '../service/redlock.service.js';

/**
 * Distributed locks for a Nest app. Provides and exports {@link RedlockService}; enables
 * `@WithLock` methods and `@LockRoute` handlers. On HTTP routes, lock errors answer
 * 409/423 + `Retry-After`, 503 or 400 (never 500); `http: { global: true }` also locks
 * `@WithLock` handlers before their pipes run. Import it once per Redlock instance: the
 * unnamed one, and any number with a `name` (`@WithLock(key, { redlock: name })`,
 * `@InjectRedlock(name)`).
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
 *     // a second, named instance on other nodes:
 *     RedlockModule.forRoot({ name: 'payments', nodes: ['redis://p1:6379', 'redis://p2:6379', 'redis://p3:6379'], isGlobal: true }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RedlockInstanceBinder, ...redlockHttpProviders],
})
export class RedlockModule extends ConfigurableRedlockModule {
  /** The module with `options`; `name` (optional) names the instance. */
  static override forRoot(options: RedlockModuleForRootOptions): DynamicModule {
    return withInstanceName(super.forRoot(options), (options as { name?: unknown } | undefined)?.name);
  }

  /** The module with options from a factory, class or existing provider; `name` (optional) names the instance. */
  static override forRootAsync(options: RedlockModuleAsyncOptions): DynamicModule {
    return withInstanceName(super.forRootAsync(options), (options as { name?: unknown } | undefined)?.name);
  }
}

/**
 * Provides the instance's service and name. A named instance's service exists under its own
 * token only, so neither a global named import nor `app.get(RedlockService)` ever finds it in
 * place of the default one.
 */
function withInstanceName(definition: DynamicModule, name: unknown): DynamicModule {
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    throw new RedlockArgumentError(
      `RedlockModule options.name must be a non-empty string like 'payments', got ${typeof name === 'object' ? JSON.stringify(name) : typeof name === 'string' ? "''" : typeof name}.`,
    );
  }
  const instance = name ?? DEFAULT_REDLOCK_NAME;
  const token = getRedlockServiceToken(instance);
  const providers: Provider[] = [
    token === RedlockService ? RedlockService : { provide: token, useClass: RedlockService },
    { provide: REDLOCK_LOCAL_SERVICE, useExisting: token },
    { provide: REDLOCK_INSTANCE_NAME, useValue: instance },
  ];
  return {
    ...definition,
    providers: [...(definition.providers ?? []), ...providers],
    exports: [...(definition.exports ?? []), token],
  };
}
