import type { Logger } from '@nestjs/common';
import { DEFAULT_REDLOCK_NAME } from '../options/constants.js';
import type { LockServiceBase } from '../service/lock-service.base.js';

/** A lock a decorator declares on a method: `@WithLock`, `@WithSemaphore` or `@LockRoute`. */
export interface LockDeclaration {
  /** The Redlock instance it asks for (`redlock` option); undefined: the unnamed one. */
  readonly name: string | undefined;
  /** `@WithLock on Orders.pay`: names the declaration in messages. */
  readonly where: string;
  /** Its own `ttl`, when it has one (else the module's `ttl`, already declared by the module). */
  readonly ttl: number | undefined;
}

/**
 * Tells the instance's lock engine the TTLs its decorators declare, at bootstrap: the restart
 * rule then knows the largest TTL in use before the first lock is taken (see the core's
 * `restartRule.declaredTtlMs`). A `restartRule.maxTtlMs` the user set is kept as the strict
 * rule; a declared TTL above it is logged once, with the fix, since a node that restarted
 * would then count again while such a lock may still be held.
 *
 * @example
 * ```ts
 * declareLockTtls(service, 'default', [{ name: undefined, where: '@WithLock on Orders.pay', ttl: 30_000 }], logger, warned);
 * ```
 */
export function declareLockTtls(
  service: LockServiceBase,
  instance: string,
  found: readonly LockDeclaration[],
  logger: Logger,
  warned: Set<string>,
): void {
  const rule = service.options.core.restartRule;
  if (rule === false) return;
  for (const { name, where, ttl } of found) {
    if (ttl === undefined || (name ?? DEFAULT_REDLOCK_NAME) !== instance) continue;
    const configured = rule?.maxTtlMs;
    if (configured === undefined) {
      service.redlock.declareTtl?.(ttl);
    } else if (ttl > configured && !warned.has(where)) {
      warned.add(where);
      logger.warn(
        `${where} declares ttl ${ttl} ms, above restartRule.maxTtlMs (${configured} ms): a node that restarted empty counts again while such a lock may still be held. Raise restartRule.maxTtlMs to at least ${ttl}.`,
      );
    }
  }
}
