/** Child node processes that run a test's ES module script and report on stdout, line by line. */
import { spawn, type ChildProcess } from 'node:child_process';
import { CHILD_GUARD_ARGS } from './child-process-guard.js';

/** A running child script: the process, and its stdout lines once it exits. */
export interface ChildScript {
  readonly child: ChildProcess;
  readonly done: Promise<{ code: number | null; lines: string[] }>;
}

/**
 * Runs `script` (an ES module, as source text) in a child node process that exits with code 1
 * after any process warning (see CHILD_GUARD_ARGS); `onLine` sees each stdout line as it comes.
 *
 * @example
 * ```ts
 * const { done } = runScript(`console.log('ready')`, (line) => line === 'ready' && ready++);
 * expect((await done).code).toBe(0);
 * ```
 */
export function runScript(script: string, onLine?: (line: string) => void): ChildScript {
  const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      onLine?.(line);
    }
  });
  const done = new Promise<{ code: number | null; lines: string[] }>((resolve) => child.once('exit', (code) => resolve({ code, lines })));
  return { child, done };
}
