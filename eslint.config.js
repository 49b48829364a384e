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
      // `async` without `await` is how a function turns a synchronous throw into a rejection;
      // every Promise-returning API here relies on that, and decorated stubs are async by contract.
      '@typescript-eslint/require-await': 'off',
      // Passing on a caught `unknown`, or an AbortSignal's `reason` (typed `any`, like fetch rejects
      // with it), is the contract; rejecting with a literal is the bug this rule is for.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true, allowThrowingAny: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests read untyped data on purpose: supertest's `res.body`, JSON.parse of logs and
      // child-process output, mocks. Their assertions (not the types) check that data.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Variables set in beforeAll are typed as set; afterAll's `?.` guards the run where beforeAll threw.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Stub methods under @WithLock / @LockRoute keep the parameter names their key templates read.
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // The key compiler is handed prototype methods to read their parameter names; it never calls them.
      '@typescript-eslint/unbound-method': 'off',
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
