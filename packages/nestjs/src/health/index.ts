export {
  DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS,
  RedlockHealthIndicator,
  type RedlockHealthDetails,
  type RedlockHealthOptions,
} from './redlock-health.indicator.js';
export { RedlockHealthModule } from './redlock-health.module.js';
export type { NodeHealth } from './node-probe.js';
