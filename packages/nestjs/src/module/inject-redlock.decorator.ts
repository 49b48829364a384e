import { Inject } from '@nestjs/common';
import { DEFAULT_REDLOCK_NAME } from '../options/constants.js';
import { RedlockService } from '../service/redlock.service.js';

/**
 * The injection token of a Redlock instance's `RedlockService`: the class itself for the default
 * instance, a string for one named with `RedlockModule.forRoot({ name })`.
 *
 * @example
 * ```ts
 * const payments = app.get<RedlockService>(getRedlockServiceToken('payments'));
 * ```
 */
export function getRedlockServiceToken(name: string = DEFAULT_REDLOCK_NAME): typeof RedlockService | string {
  return name === DEFAULT_REDLOCK_NAME ? RedlockService : `redlock-nest:RedlockService:${name}`;
}

/**
 * Injects the `RedlockService` of the instance `name` (default: the unnamed one).
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Payments {
 *   constructor(@InjectRedlock('payments') private readonly locks: RedlockService) {}
 * }
 * ```
 */
export function InjectRedlock(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getRedlockServiceToken(name));
}
