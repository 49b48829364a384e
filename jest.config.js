/** Jest runs as ESM (NestJS 12 is ESM-only): NODE_OPTIONS=--experimental-vm-modules. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: {
    '^@redlock-nest/(core|nestjs|etcd|redis-process)$': '<rootDir>/packages/$1/src/index.ts',
    '^@redlock-nest/core/(testing|operator|internal)$': '<rootDir>/packages/core/src/$1/index.ts',
    '^@redlock-nest/nestjs/(health|testing)$': '<rootDir>/packages/nestjs/src/$1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // The one CommonJS source file (its own `require` for optional peers, in both builds).
    '^(\\.{1,2}/(?:.*/)?package-require)\\.cjs$': '$1.cts',
  },
  // Jest's defaults plus 'cts' (src/package-require.cts).
  moduleFileExtensions: ['js', 'mjs', 'cjs', 'jsx', 'ts', 'mts', 'cts', 'tsx', 'json', 'node'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/test/tsconfig.json', diagnostics: false }],
    '^.+\\.cts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json', diagnostics: false }],
  },
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  // Every test file: a test fails on any unhandledRejection, uncaughtException or process warning.
  setupFilesAfterEnv: ['<rootDir>/test/harness/fail-on-process-events.ts'],
  testTimeout: 30000,
  // npm test's shards split the files by their recorded durations (test/durations.json).
  testSequencer: '<rootDir>/test/harness/duration-sequencer.js',
  // Files run one at a time per jest run; `npm test` runs two jest runs side by side, each on its
  // own port range (scripts/test-shards.mjs).
  maxWorkers: 1,
};
