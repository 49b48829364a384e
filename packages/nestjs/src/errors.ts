import { RedlockArgumentError, RedlockError } from '@redlock-nest/core';

/**
 * A `@WithLock` method (or a `@LockRoute` guard) ran in a process where no `RedlockModule`
 * is initialised. The method body is never run without its lock; fix the module setup.
 *
 * @example
 * ```ts
 * @Module({ imports: [RedlockModule.forRoot({ nodes: ['redis://localhost:6379'] })] })
 * export class AppModule {}
 * ```
 */
export class RedlockModuleNotInitializedError extends RedlockError {
  constructor(where: string) {
    super(
      `${where} needs a lock, but no RedlockModule is initialised. ` +
        'Import RedlockModule.forRoot({ nodes: [...] }) (or forRootAsync) in your AppModule and start the app ' +
        '(app.init() / app.listen()) before calling it. The method was not run.',
    );
  }
}

/**
 * A lock key template is invalid (at decoration time) or resolved to an unusable value
 * (at call time): a missing parameter, or `undefined`/`null`/`''`/an object where an id was
 * expected. Never silently locks `order:undefined`.
 *
 * @example
 * ```ts
 * try {
 *   await orders.pay(body.orderId); // @WithLock('order:<id>')
 * } catch (err) {
 *   if (err instanceof LockKeyError) throw new BadRequestException('orderId is required');
 *   throw err;
 * }
 * ```
 */
export class LockKeyError extends RedlockArgumentError {}
