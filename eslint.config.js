// ESLint flat config: typescript-eslint's type-aware rules over every TypeScript
// source (packages, tests, sample app, bench, chaos). Formatting belongs to Prettier
// (`npm run format`), so no stylistic rules here.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'docs/api/**', 'coverage/**', '.bench-results/**', '.chaos/**'],
  },
  {
    files: ['**/*.ts', '**/*.cts', '**/*.mts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        // Each file is checked by the nearest tsconfig.json (packages/*, test, sample-app, bench, chaos).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unnecessary-condition': 'error',
      // `_`-prefixed names are deliberately unused (required positional parameters).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // The CommonJS entry of /health is compiled by tsconfig.cjs.json only (the ESM tsconfig excludes it).
    files: ['packages/nestjs/src/health/require-entry.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: './packages/nestjs/tsconfig.cjs.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
);
