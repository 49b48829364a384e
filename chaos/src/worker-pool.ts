import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { WORKER_CONFIG_ENV, type FromWorker, type ScenarioResult, type ToWorker, type WorkerConfig } from './worker-config.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker.js', import.meta.url));
/** Bound on a worker's start and on its shutdown: a stuck worker is killed, not waited for. */
const START_BOUND_MS = 20_000;
const STOP_BOUND_MS = 20_000;

/** One forked worker process. */
export class WorkerHandle {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private busyWaiter: (() => void) | undefined;
  private scenarioWaiter: ((result: ScenarioResult | undefined) => void) | undefined;
  private stopped = false;
  cycles = 0;
  warnings = 0;
  handoffs = 0;
  failure: string | undefined;

  constructor(readonly config: WorkerConfig) {
    this.child = fork(WORKER_SCRIPT, [], {
      env: { ...process.env, [WORKER_CONFIG_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.on('message', (m: FromWorker) => {
      if (m.type === 'busy-done') this.busyWaiter?.();
      if (m.type === 'scenario-done') this.scenarioWaiter?.(m.result);
      if (m.type === 'done') {
        this.cycles = m.cycles;
        this.warnings = m.warnings;
        this.handoffs = m.handoffs;
      }
      if (m.type === 'failed') this.failure = m.message;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves when the worker is connected and about to start cycling. */
  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${this.config.id} did not start`)), START_BOUND_MS);
      this.child.on('message', (m: FromWorker) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      });
      void this.exited.then((code) => reject(new Error(`worker ${this.config.id} exited with ${code} before it was ready`)));
    });
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.stopped) this.child.kill(sig);
  }

  /** Asks for a busy loop of `ms` in the next critical section; resolves when it was done (bounded). */
  busy(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.busyWaiter = undefined;
        resolve();
      };
      const timer = setTimeout(finish, ms + 10_000);
      this.busyWaiter = finish;
      this.send({ type: 'busy', ms });
    });
  }

  /**
   * Runs an overload scenario in the worker (alongside its cycles); resolves with what it did,
   * or `undefined` when it did not finish within `boundMs`.
   */
  scenario(type: 'storm' | 'burst', resource: string, size: number, boundMs: number): Promise<ScenarioResult | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(undefined), boundMs);
      const finish = (result: ScenarioResult | undefined): void => {
        clearTimeout(timer);
        this.scenarioWaiter = undefined;
        resolve(result);
      };
      this.scenarioWaiter = finish;
      this.send({ type, resource, size });
    });
  }

  /** Tells the worker to finish its cycle and exit; kills it if it does not within the bound. */
  async stop(): Promise<number | null> {
    this.signal('SIGCONT');
    this.send({ type: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_BOUND_MS);
    const code = await this.exited;
    clearTimeout(timer);
    this.stopped = true;
    return code;
  }

  /** Kills the worker at once (cleanup after a failed run). */
  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }

  private send(m: ToWorker): void {
    if (this.child.connected) this.child.send(m);
  }
}
