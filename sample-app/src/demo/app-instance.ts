import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The compiled entry point of one service instance. */
const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

const live = new Set<ChildProcess>();
// If the demo dies without its teardown, no app instance outlives it.
process.on('exit', () => {
  for (const child of live) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

interface LineWaiter {
  readonly pattern: RegExp;
  readonly resolve: (match: RegExpMatchArray) => void;
}

/**
 * One instance of the sample app as a separate OS process (`node dist/main.js`),
 * its output going to a log file. The demo watches its stdout for marker lines
 * ("listening on …", the freeze hook's "DEMO-FREEZE …").
 */
export class AppInstance {
  private readonly waiters = new Set<LineWaiter>();
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly name: string,
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly log: WriteStream,
  ) {
    live.add(child);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.exitCode = code ?? (signal ? -1 : null);
        resolve(code);
      }),
    );
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => this.onLine(line));
    }
  }

  /** Spawns the instance and resolves once it listens. */
  static async start(name: string, port: number, env: Record<string, string>, logFile: string): Promise<AppInstance> {
    const log = createWriteStream(logFile, { flags: 'a' });
    const child = spawn(process.execPath, [MAIN], {
      env: { ...process.env, ...env, PORT: String(port), INSTANCE_ID: name, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const instance = new AppInstance(name, port, child, log);
    const exit = instance.exited.then((code) => {
      throw new Error(`${name} exited with code ${code} during startup; see ${logFile}`);
    });
    await Promise.race([instance.waitForLine(/listening on (http:\/\/\S+)/), exit]);
    exit.catch(() => undefined);
    return instance;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the first output line (from now on) that matches. */
  waitForLine(pattern: RegExp): Promise<RegExpMatchArray> {
    return new Promise((resolve) => this.waiters.add({ pattern, resolve }));
  }

  /** Graceful stop (SIGTERM: Nest closes Redlock and the database); SIGKILL if it hangs. */
  async stop(): Promise<void> {
    if (this.exitCode !== undefined) return;
    this.child.kill('SIGCONT');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
    await new Promise<void>((resolve) => this.log.end(resolve));
  }

  private onLine(line: string): void {
    this.log.write(`${line}\n`);
    for (const waiter of this.waiters) {
      const match = waiter.pattern.exec(line);
      if (match) {
        this.waiters.delete(waiter);
        waiter.resolve(match);
      }
    }
  }
}
