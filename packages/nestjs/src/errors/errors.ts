import { RedlockArgumentError, RedlockError } from '@redlock-nest/core';

/**
 * A `@WithLock` method (or a `@LockRoute` guard) has no lock service: no `RedlockModule` of that
 * name is imported in the app that created the instance, or the instance was made with `new` of a
 * class no running app provides. The method body is never run without its lock; fix the setup
 * named in the message.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlockModule.forRoot({ nodes: ['redis://localhost:6379'], isGlobal: true }),
 *     RedlockModule.forRoot({ name: 'payments', nodes: ['redis://payments:6379'], isGlobal: true }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
export class RedlockModuleNotInitializedError extends RedlockError {
  /** The Redlock instance name asked for (`undefined`: the default one). */
  readonly instanceName: string | undefined;

  constructor(where: string, instanceName?: string, appHasOthers = false) {
    const forRoot =
      instanceName === undefined
        ? 'RedlockModule.forRoot({ nodes: [...] })'
        : `RedlockModule.forRoot({ name: '${instanceName}', nodes: [...] })`;
    super(
      appHasOthers
        ? `${where} locks on the Redlock instance ${instanceName === undefined ? '(default)' : `'${instanceName}'`}, but its app ` +
            `imports no ${forRoot} (or forRootAsync). Import it, or name an instance the app has. The method was not run.`
        : `${where} needs a lock, but no RedlockModule is initialised for it. Import ${forRoot} (or forRootAsync) in the ` +
            'app that provides this class and start the app (app.init() / app.listen()) before calling it; get the instance ' +
            'from the app (a provider or controller), not with `new` of a class no running app provides. ' +
            'The method was not run.',
    );
    this.instanceName = instanceName;
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

/**
 * A call asked for a fencing token (`{ fencing: true }`), but its call chain already holds the
 * key through a lock taken without fencing.
 *
 * @deprecated No longer thrown: such a call now gives the held lock a fresh token with
 * `lock.fence()` (an owner-checked fencing round under the held lock) and runs. Kept so code
 * that catches it still compiles.
 *
 * @example
 * ```ts
 * @Post(':id/pay')
 * @LockRoute('order:<id>') // unfenced outer lock: the fenced inner call fences it
 * pay(@Param('id') id: string) { return this.payments.pay(id); } // @WithLock('order:<id>', { fencing: true })
 * ```
 */
export class FencingUnavailableError extends RedlockArgumentError {
  readonly resources: readonly string[];

  constructor(where: string, resources: readonly string[]) {
    super(
      `${where} asks for a fencing token, but this call chain already holds ${JSON.stringify(resources)} through a lock ` +
        'taken without fencing. Add { fencing: true } to the outer @LockRoute / @WithLock / using() that locks it. ' +
        'The method was not run.',
    );
    this.resources = resources;
  }
}

/**
 * `@LockRoute` sits on a handler that was called outside HTTP (a microservice message, a
 * WebSocket event, a GraphQL resolver). Its key comes from an HTTP request, so there is nothing
 * to lock on: the call is refused instead of running unlocked. Use `@WithLock` there, whose key
 * comes from the method's arguments.
 *
 * @example
 * ```ts
 * @MessagePattern('orders.pay')
 * @WithLock('order:<data.id>') // not @LockRoute
 * pay(@Payload() data: { id: string }) { ... }
 * ```
 */
export class LockRouteContextError extends RedlockArgumentError {
  constructor(where: string, type: string) {
    super(
      `@LockRoute on ${where} was called in a '${type}' context: its key comes from an HTTP request, so it only ` +
        "works on HTTP routes. Use @WithLock('key:<param>') on this handler instead. The handler was not run.",
    );
  }
}
