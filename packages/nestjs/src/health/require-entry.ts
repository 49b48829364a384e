/**
 * The CommonJS entry point of `@redlock-nest/nestjs/health` (compiled only into `dist/cjs`). The
 * check runs before the `require` of the exports below (CommonJS runs them in order), so a missing
 * `@nestjs/terminus` is a {@link TerminusMissingError} naming the install line, not a bare
 * MODULE_NOT_FOUND. The ESM entry point is `index.ts`.
 */
import packageRequire from '../package-require.cjs';
import { terminusMissing } from './terminus-missing.error.js';

try {
  packageRequire.resolve('@nestjs/terminus');
} catch (err) {
  throw terminusMissing(err) ?? err;
}

export * from './terminus-entry.js';
