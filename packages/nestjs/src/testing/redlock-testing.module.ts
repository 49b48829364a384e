import { Module, type DynamicModule } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DEFAULT_REDLOCK_NAME, REDLOCK_INSTANCE_NAME, REDLOCK_LOCAL_SERVICE } from '../options/constants.js';
import { getRedlockServiceToken } from '../module/inject-redlock.decorator.js';
import { redlockHttpProviders } from '../module/redlock-http.providers.js';
import { RedlockInstanceBinder } from '../module/redlock-instance.binder.js';
import { RedlockService } from '../service/redlock.service.js';
import { REDLOCK_TESTING_OPTIONS, type RedlockTestingOptions } from './redlock-testing.options.js';
import { RedlockTestingService } from './redlock-testing.service.js';

/**
 * FOR TESTS ONLY: a global stand-in for `RedlockModule` that locks in-memory Redis nodes (the core Redlock over them), so your
 * services' unit tests need no Redis. Provides {@link RedlockTestingService} (the helpers) and the
 * same instance as `RedlockService`. Import it from `@redlock-nest/nestjs/testing`.
 *
 * @example
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot({ ttl: 5_000 })],
 *   providers: [OrdersService],
 * }).compile();
 * await moduleRef.init(); // binds @WithLock methods to this module's nodes
 * ```
 */
@Module({})
export class RedlockTestingModule {
  /**
   * The testing module with `options` (all optional).
   * @example
   * ```ts
   * RedlockTestingModule.forRoot({ defaultWaitMs: 1_000 });
   * ```
   */
  static forRoot(options: RedlockTestingOptions = {}): DynamicModule {
    const name = options.name ?? DEFAULT_REDLOCK_NAME;
    const token = getRedlockServiceToken(name);
    // A named stand-in exists under its instance's token only, like a named RedlockModule.
    const services =
      token === RedlockService
        ? [RedlockTestingService, { provide: RedlockService, useExisting: RedlockTestingService }]
        : [{ provide: token, useClass: RedlockTestingService }];
    return {
      module: RedlockTestingModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [
        { provide: REDLOCK_TESTING_OPTIONS, useValue: options },
        ...services,
        { provide: REDLOCK_LOCAL_SERVICE, useExisting: token },
        { provide: REDLOCK_INSTANCE_NAME, useValue: name },
        RedlockInstanceBinder,
        // As RedlockModule: lock errors on HTTP routes answer 409/423, 503 or 400, never 500.
        ...redlockHttpProviders,
      ],
      exports: token === RedlockService ? [RedlockTestingService, RedlockService] : [token],
    };
  }
}
