import { Global, Module, type DynamicModule } from '@nestjs/common';
import { AppConfig } from './app-config.js';

/** Provides the parsed {@link AppConfig} to every module (and to RedlockModule.forRootAsync). */
@Global()
@Module({})
export class AppConfigModule {
  static forConfig(config: AppConfig): DynamicModule {
    return { module: AppConfigModule, providers: [{ provide: AppConfig, useValue: config }], exports: [AppConfig] };
  }
}
