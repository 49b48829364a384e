import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { MARKER, reapLeftovers, rememberPid } from './leftovers.js';
import { findRedisServer } from './redis-binary.js';

const live = new Set<RedisServer>();
let reaped = false;

// Last line of defence: however this process exits, no redis-server it started outlives it.
process.on('exit', () => {
  for (const server of live) server.killNow();
});

/** Options of a {@link RedisServer}. */
export interface RedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--requirepass', 'secret']`. */
  readonly args?: readonly string[];
  /** Keep data on disk across restarts (AOF with `appendfsync always`). Default false. */
  readonly persistent?: boolean;
  /**
   * Own process group, so a Ctrl-C in the terminal reaches only the parent, which then stops
   * the servers in order (a launcher), instead of killing them under a running app. Default false.
   */
  readonly detached?: boolean;
  /**
   * Run as a Sentinel (`redis-server <file> --sentinel`) with this configuration text,
   * written to the server's own folder (Sentinel rewrites it). Ready once it monitors a master.
   */
  readonly sentinelConfig?: string;
}

/**
 * One local, throw-away `redis-server` on a free 127.0.0.1 port, in its own temp folder,
 * killed by PID. Also a fault injector: kill (SIGKILL), pause (SIGSTOP), resume (SIGCONT),
 * restart on the same port.
 *
 * @example
 * ```ts
 * const server = await RedisServer.start();
 * server.pause();   // commands to it now hang
 * server.resume();
 * await server.stop();
 * ```
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopped = false;
  private isPaused = false;
  private lastReadyAt: number | undefined;

  private constructor(
    readonly port: number,
    private readonly bin: string,
    private readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /** Spawns a server and resolves once it accepts connections. Retries on a port race. */
  static async start(options: RedisServerOptions = {}, bin = findRedisServer().bin): Promise<RedisServer> {
    // `npm run test:unit` promises a run without Redis: a file that needs a server fails there, visibly.
    if (process.env.REDLOCK_NEST_UNIT) {
      throw new Error('REDLOCK_NEST_UNIT is set (npm run test:unit runs without Redis): run this file with the full suite, npm test.');
    }
    if (!reaped) {
      reaped = true;
      reapLeftovers();
    }
    for (let tries = 0; ; tries++) {
      const server = new RedisServer(await freePort(), bin, mkdtempSync(join(tmpdir(), 'redlock-nest-redis-')), options);
      try {
        await server.spawn();
        return server;
      } catch (err) {
        server.removeDir();
        if (tries >= 3) throw err;
      }
    }
  }

  get host(): string {
    return '127.0.0.1';
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  get paused(): boolean {
    return this.isPaused;
  }

  /** `running`, `paused` or `killed`. */
  get state(): 'running' | 'paused' | 'killed' {
    if (!this.child) return 'killed';
    return this.isPaused ? 'paused' : 'running';
  }

  private spawn(): Promise<void> {
    const sentinel = this.options.sentinelConfig;
    const persistence =
      sentinel !== undefined
        ? []
        : this.options.persistent
          ? ['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
          : ['--appendonly', 'no', '--save', ''];
    // A replica's full sync starts at once: by default a master waits 5 s for more replicas to share a diskless transfer.
    const replication = sentinel !== undefined ? [] : ['--repl-diskless-sync-delay', '0'];
    let configArgs: string[] = [];
    if (sentinel !== undefined) {
      // Sentinel insists on a writable config file, given first.
      const file = join(this.dir, 'sentinel.conf');
      writeFileSync(file, sentinel);
      configArgs = [file, '--sentinel'];
    }
    const ready = sentinel !== undefined ? '+monitor master' : 'Ready to accept connections';
    const args = [
      ...configArgs,
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--protected-mode',
      'no',
      '--daemonize',
      'no',
      '--dir',
      this.dir,
      '--logfile',
      '',
      ...persistence,
      ...replication,
      ...(this.options.args ?? []),
    ];
    const child = spawn(this.bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, [MARKER]: '1' },
      detached: this.options.detached ?? false,
    });
    this.child = child;
    live.add(this);
    if (child.pid) rememberPid(child.pid);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      let log = '';
      const onData = (chunk: Buffer): void => {
        log += chunk.toString();
        if (log.includes(ready)) {
          const line = log.split('\n').find((l) => l.includes(ready)) ?? '';
          this.lastReadyAt = logLineTime(line) ?? Date.now();
          child.stdout.off('data', onData);
          child.stdout.resume();
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.resume();
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (this.child === child) {
          this.child = undefined;
          live.delete(this);
        }
        reject(new Error(`redis-server on port ${this.port} exited (${signal ?? `code ${code}`}): ${log.slice(-400)}`));
      });
    });
  }

  /** SIGKILL (a crash, no goodbye) and wait until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.isPaused) this.resume();
    child.kill('SIGKILL');
    await this.exited;
    this.child = undefined;
    live.delete(this);
  }

  /** Freeze the server (SIGSTOP): connections stay open, commands hang. */
  pause(): void {
    if (!this.child || this.isPaused) return;
    this.child.kill('SIGSTOP');
    this.isPaused = true;
  }

  /** Unfreeze a paused server (SIGCONT). */
  resume(): void {
    if (!this.child || !this.isPaused) return;
    this.child.kill('SIGCONT');
    this.isPaused = false;
  }

  /**
   * When the server last became ready to accept connections (epoch ms), as its own log line says:
   * it answers nothing before. Read when a test's clock must not be late by the time it took us to
   * read that line (a loaded machine): a chaos window ending then would count the server's first
   * answers as given while it was down. Undefined before the first start.
   */
  get readyAt(): number | undefined {
    return this.lastReadyAt;
  }

  /** Kill and start again on the same port (data kept only when `persistent`). */
  async restart(): Promise<void> {
    if (this.stopped) throw new Error(`redis-server on port ${this.port} was stopped; start a new one`);
    await this.kill();
    await this.spawn();
  }

  /**
   * Forgets the data of a killed server (its AOF and RDB files), so the next `restart()`
   * comes back empty even when `persistent`: a node replaced or restarted without its disk.
   */
  wipe(): void {
    if (this.child) throw new Error(`redis-server on port ${this.port} is running; kill() it before wipe()`);
    this.removeDir();
    mkdirSync(this.dir, { recursive: true });
  }

  /** Kill the server and remove its folder. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.kill();
    this.removeDir();
  }

  /** @internal synchronous kill, for the exit handler */
  killNow(): void {
    try {
      if (this.isPaused) this.child?.kill('SIGCONT');
      this.child?.kill('SIGKILL');
    } catch {
      // already gone
    }
    this.removeDir();
  }

  private removeDir(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * When a redis-server log line was written (epoch ms), from the line itself
 * (`<pid>:<role> 04 Dec 2026 15:51:22.756 * Ready to accept connections`): Redis writes its local
 * time, which `Date` parses as local time too. Undefined when the line has no such stamp.
 */
export function logLineTime(line: string): number | undefined {
  const m = /^\d+:[A-Z] (\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2})\.(\d{3}) /.exec(line.trim());
  if (!m) return undefined;
  const at = new Date(m[1]!).getTime();
  return Number.isNaN(at) ? undefined : at + Number(m[2]);
}
