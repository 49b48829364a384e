/**
 * Declarations of the third-party modules the documentation's examples import but this
 * repository does not install (the user's app does): the docs test compiles the examples with
 * these, so it checks our API usage without adding dependencies. Only the members the examples
 * use, with the packages' real signatures.
 */
declare module '@nestjs/config' {
  import type { DynamicModule } from '@nestjs/common';
  export class ConfigModule {
    static forRoot(options?: Record<string, unknown>): DynamicModule;
  }
  // The package's real signature has `T = any` defaults.
  /* eslint-disable @typescript-eslint/no-explicit-any */
  export class ConfigService {
    get<T = any>(propertyPath: string): T | undefined;
    getOrThrow<T = any>(propertyPath: string): T;
  }
  /* eslint-enable @typescript-eslint/no-explicit-any */
}

declare module '@opentelemetry/sdk-node' {
  export class NodeSDK {
    constructor(configuration?: Record<string, unknown>);
    start(): void;
    shutdown(): Promise<void>;
  }
}
