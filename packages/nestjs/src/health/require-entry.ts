/**
 * The CommonJS run-time entry of `@redlock-nest/nestjs/health` (its types are `index.d.ts`). The
 * check runs before the `require` of the exports below (CommonJS runs them in order), so a missing
 * `@nestjs/terminus` is a TerminusMissingError naming the install line, not a bare MODULE_NOT_FOUND.
 * Compiled only into the CommonJS build; the ESM entry is `import-entry.ts`.
 */
import packageRequire from '../package-require.cjs';
import { terminusMissing } from './terminus-missing.error.js';

try {
  packageRequire.resolve('@nestjs/terminus');
} catch (err) {
  throw terminusMissing(err) ?? err;
}

export * from './index.js';
