import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Compiles the sample app (and the packages it references) to sample-app/dist. */
export function buildSampleApp(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-b', 'sample-app'], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tsc -b sample-app failed:\n${result.stdout}${result.stderr}`);
}

/** A child process with its output collected and its exit awaitable. */
export interface Run {
  readonly child: ChildProcess;
  readonly exit: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout match (rejects if the process exits first). */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
}

/** Runs `node <script> ...args` from the repository root. */
export function runNode(script: string, args: readonly string[], env: NodeJS.ProcessEnv): Run {
  const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    for (const l of listeners) l();
  });
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exit,
    stdout: () => out,
    stderr: () => err,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(out);
          if (match) {
            listeners.delete(check);
            resolve(match);
          }
        };
        listeners.add(check);
        check();
        void exit.then((code) => {
          if (listeners.delete(check)) reject(new Error(`exited with ${code} before ${pattern}:\n${out}\n${err}`));
        });
      }),
  };
}
