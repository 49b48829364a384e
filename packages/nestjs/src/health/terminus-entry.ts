/**
 * Everything `@redlock-nest/nestjs/health` exports. These modules import `@nestjs/terminus`, so the
 * entry points load this file only after checking that terminus is installed (see `index.ts` for
 * ESM and `require-entry.ts` for CommonJS).
 */
export {
  DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS,
  RedlockHealthIndicator,
  type RedlockHealthDetails,
  type RedlockHealthOptions,
} from './redlock-health.indicator.js';
export { RedlockHealthModule } from './redlock-health.module.js';
export type { NodeHealth } from './node-probe.js';
export { TerminusMissingError } from './terminus-missing.error.js';
