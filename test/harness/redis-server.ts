/**
 * Spawns real `redis-server` processes on free 127.0.0.1 ports for tests and
 * benchmarks, and injects faults into them: kill, pause (SIGSTOP), resume, restart.
 *
 * Every process is killed by PID in `stop()`, on process exit, and (for ones a
 * crashed earlier run left behind) at the next start, via a PID registry file.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const REGISTRY = join(tmpdir(), 'redlock-nest-test-redis.pids');
const live = new Set<RedisServer>();

/** Finds redis-server or fails with how to install it. */
export function redisServerBinary(): string {
  const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `redis-server not found (tried "${bin}"). Install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis) or set REDIS_SERVER_BIN.`,
    );
  }
  return bin;
}

function isOurRedis(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server') &&
      readFileSync(`/proc/${pid}/environ`, 'utf8').includes('REDLOCK_NEST_TEST_SERVER=1');
  } catch {
    return false;
  }
}

/** Kills test servers an earlier, crashed run left behind (only ones this harness started). */
function reapLeftovers(): void {
  if (!existsSync(REGISTRY)) return;
  for (const line of readFileSync(REGISTRY, 'utf8').split('\n')) {
    const pid = Number(line);
    if (pid > 0 && isOurRedis(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  writeFileSync(REGISTRY, '');
}
let reaped = false;

process.on('exit', () => {
  for (const server of live) server.killSync();
});

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface RedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--requirepass', 'secret']`. */
  readonly args?: readonly string[];
  /** Keep data on disk across restarts (AOF with appendfsync always). Default false. */
  readonly persistent?: boolean;
}

/** One spawned redis-server. */
export class RedisServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly dir: string;
  paused = false;

  private constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'redlock-nest-redis-'));
  }

  /** Starts a server on a free port and resolves once it accepts connections. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    if (!reaped) {
      reaped = true;
      reapLeftovers();
    }
    for (let tries = 0; ; tries++) {
      const server = new RedisServer(await freePort(), options);
      try {
        await server.spawn();
        return server;
      } catch (err) {
        server.cleanupDir();
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

  private spawn(): Promise<void> {
    const persistence = this.options.persistent
      ? ['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
      : ['--appendonly', 'no', '--save', ''];
    const args = [
      '--port', String(this.port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--daemonize', 'no',
      '--dir', this.dir, '--logfile', '', '--loglevel', 'notice', ...persistence, ...(this.options.args ?? []),
    ];
    const child = spawn(redisServerBinary(), args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, REDLOCK_NEST_TEST_SERVER: '1' },
    });
    this.child = child;
    live.add(this);
    if (child.pid) appendFileSync(REGISTRY, `${child.pid}\n`);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      let log = '';
      const onData = (chunk: Buffer): void => {
        log += chunk.toString();
        if (log.includes('Ready to accept connections')) {
          child.stdout?.off('data', onData);
          child.stdout?.resume();
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.resume();
      child.once('exit', (code) => {
        if (this.child === child) {
          this.child = undefined;
          live.delete(this);
        }
        reject(new Error(`redis-server on port ${this.port} exited with code ${code}: ${log.slice(-500)}`));
      });
    });
  }

  /** SIGKILL, and wait until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.paused) this.resume();
    child.kill('SIGKILL');
    await this.exited;
    this.child = undefined;
    live.delete(this);
  }

  /** Freeze the server (SIGSTOP): connections stay open, commands hang. */
  pause(): void {
    if (!this.child || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** Unfreeze a paused server (SIGCONT). */
  resume(): void {
    if (!this.child || !this.paused) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** Kill and start again on the same port (data kept only when `persistent`). */
  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  /** Kill and remove the data folder. */
  async stop(): Promise<void> {
    await this.kill();
    this.cleanupDir();
  }

  /** @internal for the exit handler */
  killSync(): void {
    try {
      this.child?.kill('SIGKILL');
    } catch {
      // already gone
    }
    this.cleanupDir();
  }

  private cleanupDir(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** N independent servers started together. */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  static async start(count: number, options: RedisServerOptions = {}): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < count; i++) servers.push(await RedisServer.start(options));
    } catch (err) {
      await Promise.all(servers.map((s) => s.stop()));
      throw err;
    }
    return new RedisCluster(servers);
  }

  get urls(): string[] {
    return this.servers.map((s) => s.url);
  }

  server(i: number): RedisServer {
    const s = this.servers[i];
    if (!s) throw new Error(`no server ${i}`);
    return s;
  }

  /** Resume paused servers and kill every process. */
  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}
