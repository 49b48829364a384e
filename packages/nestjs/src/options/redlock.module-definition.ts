import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockModuleOptions } from './redlock-options.js';

export type { RedlockModuleOptions } from './redlock-options.js';

/**
 * `forRoot(options)` and `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`,
 * both accepting `isGlobal` and `name` (the instance name; see `RedlockModule`). The options object
 * is provided under {@link REDLOCK_MODULE_OPTIONS}.
 */
export const {
  ConfigurableModuleClass: ConfigurableRedlockModule,
  MODULE_OPTIONS_TOKEN: REDLOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: REDLOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: REDLOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedlockModuleOptions>({ moduleName: 'Redlock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedlockOptions')
  .setExtras({ isGlobal: false, name: undefined as string | undefined }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();

/** What `forRoot()` accepts. */
export type RedlockModuleForRootOptions = typeof REDLOCK_OPTIONS_TYPE;
/** What `forRootAsync()` accepts. */
export type RedlockModuleAsyncOptions = typeof REDLOCK_ASYNC_OPTIONS_TYPE;

/**
 * A class for `forRootAsync({ useClass })` / `useExisting`.
 *
 * @example
 * ```ts
 * @Injectable()
 * class RedlockConfig implements RedlockOptionsFactory {
 *   createRedlockOptions(): RedlockModuleOptions {
 *     return { nodes: [process.env.REDIS_URL!] };
 *   }
 * }
 * RedlockModule.forRootAsync({ useClass: RedlockConfig });
 * ```
 */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}
