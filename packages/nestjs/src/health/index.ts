/**
 * The ESM entry point of `@redlock-nest/nestjs/health`. Its exports are loaded with a dynamic
 * import, after which a missing `@nestjs/terminus` becomes a {@link TerminusMissingError} naming
 * the install line: a static import would fail while linking, before any code here could run.
 * The CommonJS entry point is `require-entry.ts`.
 */
import { terminusMissing } from './terminus-missing.error.js';

type Entry = typeof import('./terminus-entry.js');

let entry: Entry;
try {
  entry = await import('./terminus-entry.js');
} catch (err) {
  throw terminusMissing(err) ?? err;
}

export const DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS: Entry['DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS'] = entry.DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS;
export const RedlockHealthIndicator: Entry['RedlockHealthIndicator'] = entry.RedlockHealthIndicator;
export type RedlockHealthIndicator = InstanceType<Entry['RedlockHealthIndicator']>;
export const RedlockHealthModule: Entry['RedlockHealthModule'] = entry.RedlockHealthModule;
export type RedlockHealthModule = InstanceType<Entry['RedlockHealthModule']>;
export { TerminusMissingError } from './terminus-missing.error.js';
export type { NodeHealth, RedlockHealthDetails, RedlockHealthOptions } from './terminus-entry.js';
