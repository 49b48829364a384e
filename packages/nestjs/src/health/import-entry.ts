/**
 * The ESM run-time entry of `@redlock-nest/nestjs/health` (its types are `index.d.ts`). The exports
 * are loaded with a dynamic import, so a missing `@nestjs/terminus` becomes a TerminusMissingError
 * naming the install line: with a static import, the runtime's ERR_MODULE_NOT_FOUND would be thrown
 * while linking, before any code here could run. Compiled only into the ESM build; the CommonJS
 * entry is `require-entry.ts`.
 */
import { terminusMissing } from './terminus-missing.error.js';

let entry: typeof import('./index.js');
try {
  entry = await import('./index.js');
} catch (err) {
  throw terminusMissing(err) ?? err;
}

export const { DEFAULT_REDLOCK_HEALTH_TIMEOUT_MS, RedlockHealthIndicator, RedlockHealthModule, TerminusMissingError } = entry;
