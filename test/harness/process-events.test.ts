/**
 * The suite-wide guard of fail-on-process-events.ts (registered in jest.config.js): run on a
 * fixture file in its own jest process, a test that provokes a process warning, an unhandled
 * rejection or an uncaught exception fails, naming the event, and the tests around it pass.
 */
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHILD_GUARD_ARGS } from './child-process-guard.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface AssertionResult {
  title: string;
  status: string;
  failureMessages: string[];
}

function runFixture(): AssertionResult[] {
  const dir = mkdtempSync(join(tmpdir(), 'process-events-'));
  try {
    const out = join(dir, 'result.json');
    const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    const args = [
      '--experimental-vm-modules',
      jest,
      '--testMatch',
      '**/harness/fixtures/process-events.fixture.ts',
      '--json',
      '--outputFile',
      out,
    ];
    const run = spawnSync(process.execPath, args, { cwd: root, env: { ...process.env, NODE_OPTIONS: '' }, encoding: 'utf8' });
    expect(run.status).toBe(1); // the fixture's failing tests fail the run
    const report = JSON.parse(readFileSync(out, 'utf8')) as { testResults: Array<{ assertionResults: AssertionResult[] }> };
    return report.testResults[0]!.assertionResults;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('fail-on-process-events (every test file)', () => {
  it('fails the test that caused a warning, an unhandled rejection or an uncaught exception, and only that test', () => {
    const results = runFixture();
    const byTitle = new Map(results.map((r) => [r.title, r]));
    const failure = (title: string) => byTitle.get(title)!.failureMessages.join('\n');

    expect(results.map((r) => [r.title, r.status])).toEqual([
      ['clean: passes', 'passed'],
      ['warning: fails', 'failed'],
      ['allowed warning: passes', 'passed'],
      ['unhandled rejection: fails', 'failed'],
      ['uncaught exception: fails', 'failed'],
      ['after the events: passes', 'passed'],
    ]);
    expect(failure('warning: fails')).toMatch(/warning: MaxListenersExceededWarning/);
    // The warning's own stack is kept, so the line that caused it is named.
    expect(failure('warning: fails')).toMatch(/process-events\.fixture\.ts:\d+/);
    expect(failure('unhandled rejection: fails')).toMatch(/unhandledRejection: Error: fixture rejection/);
    expect(failure('uncaught exception: fails')).toMatch(/uncaughtException: Error: fixture uncaught/);
  });

  it('makes a spawned Node.js child exit 1 after a process warning, even when it exits 0 itself', () => {
    const run = (script: string) =>
      spawnSync(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
        env: { ...process.env, NODE_OPTIONS: '' },
        encoding: 'utf8',
      });
    const warned = run("process.emitWarning('child warning'); setImmediate(() => process.exit(0));");
    expect(warned.status).toBe(1);
    expect(warned.stderr).toContain('process warning (fails this child): Warning: child warning');
    const clean = run("console.log('ok');");
    expect({ status: clean.status, stdout: clean.stdout, stderr: clean.stderr }).toEqual({ status: 0, stdout: 'ok\n', stderr: '' });
  });
});
