/**
 * Builds the chaos CLI once per test file and runs it in a child process, so what it
 * measures (handles, exit) is not mixed with the test runner's own timers and sockets.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = process.cwd();
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');

export interface CliRun {
  /** Exit code; null when the process was killed (e.g. it did not exit within the timeout). */
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
}

export function runNode(args: string[], timeoutMs: number): CliRun {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL' });
  return { status: r.status, signal: r.signal, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Compiles the packages the chaos CLI loads (the etcd engine too) and the CLI (chaos/dist/chaos/src/main.js). */
export function buildChaosCli(): void {
  for (const project of [
    ['-b', 'packages/core', 'packages/etcd', 'packages/redis-process'],
    ['-p', 'chaos/tsconfig.json'],
  ]) {
    const built = runNode([tsc, ...project], 120_000);
    if (built.status !== 0) throw new Error(`tsc ${project.join(' ')} failed:\n${built.output}`);
  }
}

export const CHAOS_MAIN = 'chaos/dist/chaos/src/main.js';
