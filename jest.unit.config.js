/**
 * `npm run test:unit`: the tests that need no Redis (no redis-server is spawned), for a
 * fast loop while editing. The full suite (`npm test`) runs these too.
 * A file belongs here only if it never starts a server: the harness refuses to spawn
 * one while REDLOCK_NEST_UNIT is set, so a file that starts needing Redis fails here loudly.
 */
import base from './jest.config.js';

export default {
  ...base,
  testMatch: [
    '<rootDir>/test/chaos/checker.test.ts', // the chaos history checker
    '<rootDir>/test/bench/regression.test.ts', // the benchmark's regression guard
    '<rootDir>/test/bench/read-write-windows.test.ts', // the read-write bench's windows and overlaps
    '<rootDir>/test/core/options/arguments.test.ts', // option and argument validation
    '<rootDir>/test/core/nodes/command-backlog.test.ts', // a node's client-side backlog
    '<rootDir>/test/cluster/hash-slot.test.ts', // cluster slots, hash tags, cluster entry validation
    '<rootDir>/test/nestjs/lock-key.test.ts', // key templates and parameter names
    '<rootDir>/test/docs/citations.test.ts', // sources cited by their real names
    '<rootDir>/test/fencing/settle-tokens.test.ts', // fencing arithmetic
    '<rootDir>/test/docs/code-blocks.test.ts', // documentation examples compile
    '<rootDir>/test/docs/links.test.ts', // relative Markdown links and anchors resolve
    '<rootDir>/test/docs/api-reference.test.ts', // docs/api/README.md lists every export of every entry
    '<rootDir>/test/core/public-api.test.ts', // the core's root exports are the committed list
    '<rootDir>/test/harness/process-events.test.ts', // the harness fails a test on process warnings
    '<rootDir>/test/ops/terminus-missing.test.ts',
    '<rootDir>/test/ops/testing-module.test.ts', // the in-memory testing module
    '<rootDir>/test/ops/testing-module-nodes.test.ts', // its nodes' faults
    '<rootDir>/test/core/testing/in-memory-node.test.ts', // the core Redlock over in-memory nodes
    '<rootDir>/test/core/testing/in-memory-primitives.test.ts', // read-write locks, semaphores, fair locks over them
    '<rootDir>/test/ops/testing-module-primitives.test.ts', // those primitives in the testing module
    '<rootDir>/test/nestjs/dashboard/dashboard-testing-module.test.ts', // the lock dashboard over it
    '<rootDir>/test/sample-app/demo-parts.test.ts',
    '<rootDir>/test/sample-app/orders-repository.test.ts',
  ],
};
