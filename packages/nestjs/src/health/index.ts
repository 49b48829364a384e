/**
 * Everything `@redlock-nest/nestjs/health` exports (and its types). These modules import
 * `@nestjs/terminus`, so at run time the subpath loads them through `import-entry.ts` (ESM) or
 * `require-entry.ts` (CommonJS), which first turn a missing terminus into TerminusMissingError.
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
