/** The optional peer the health entry point needs. */
const TERMINUS = '@nestjs/terminus';

/**
 * `@redlock-nest/nestjs/health` was loaded in an app without `@nestjs/terminus` (an optional peer
 * dependency: apps that do not import `/health` never need it). Thrown while the entry point
 * loads, instead of the runtime's bare "module not found", so the message says what to install.
 *
 * @example
 * ```ts
 * // npm i @nestjs/terminus    (^11 for NestJS 10 and 11, ^12 for NestJS 12)
 * import { RedlockHealthModule } from '@redlock-nest/nestjs/health';
 * ```
 */
export class TerminusMissingError extends Error {
  override readonly name = 'TerminusMissingError';
  /** The package to install. */
  readonly packageName = TERMINUS;

  constructor(options?: { cause?: unknown }) {
    super(
      `@redlock-nest/nestjs/health needs the optional peer dependency ${TERMINUS}, which is not installed. ` +
        `Install it next to @nestjs/core: npm i ${TERMINUS} (^11 for NestJS 10 and 11, ^12 for NestJS 12).`,
      options,
    );
  }
}

/**
 * The typed error when `err` says that `@nestjs/terminus` itself cannot be found (ESM:
 * ERR_MODULE_NOT_FOUND "Cannot find package '@nestjs/terminus'"; CommonJS: MODULE_NOT_FOUND
 * "Cannot find module '@nestjs/terminus'"), otherwise undefined: a terminus that is installed but
 * broken keeps its own error.
 */
export function terminusMissing(err: unknown): TerminusMissingError | undefined {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined;
  if (typeof message !== 'string') return undefined;
  const missing = /^Cannot find (?:package|module) '([^']+)'/.exec(message)?.[1];
  // ESM names the package; CommonJS may name the package or a path inside it.
  return missing === TERMINUS || missing?.startsWith(`${TERMINUS}/`) ? new TerminusMissingError({ cause: err }) : undefined;
}
