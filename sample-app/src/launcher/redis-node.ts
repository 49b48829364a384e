import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { MARKER, rememberPid } from './leftovers.js';

const live = new Set<RedisNode>();

// Last line of defence: whatever way the launcher exits, no redis-server outlives it.
process.on('exit', () => {
  for (const node of live) node.killNow();
});

/**
 * One local, throw-away `redis-server` on a free 127.0.0.1 port: no persistence,
 * its own temp folder, killed by PID. Also the fault injector of the demo
 * (kill = SIGKILL, pause = SIGSTOP, resume = SIGCONT).
 */
export class RedisNode {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private paused = false;

  private constructor(
    readonly port: number,
    private readonly bin: string,
    private readonly dir: string,
  ) {}

  /** Spawns a server and resolves once it accepts connections. Retries on a port race. */
  static async start(bin: string): Promise<RedisNode> {
    for (let tries = 0; ; tries++) {
      const node = new RedisNode(await freePort(), bin, mkdtempSync(join(tmpdir(), 'redlock-nest-sample-')));
      try {
        await node.spawn();
        return node;
      } catch (err) {
        node.removeDir();
        if (tries >= 3) throw err;
      }
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** `running`, `paused` or `killed`. */
  get state(): 'running' | 'paused' | 'killed' {
    if (!this.child) return 'killed';
    return this.paused ? 'paused' : 'running';
  }

  private spawn(): Promise<void> {
    const args = [
      '--port', String(this.port), '--bind', '127.0.0.1', '--daemonize', 'no',
      '--dir', this.dir, '--save', '', '--appendonly', 'no', '--logfile', '',
    ];
    const child = spawn(this.bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, [MARKER]: '1' },
      // Own process group: a Ctrl-C in the terminal reaches the launcher, which then
      // stops the servers in order, instead of killing them under the running app.
      detached: true,
    });
    this.child = child;
    live.add(this);
    if (child.pid) rememberPid(child.pid);
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
    if (this.paused) this.resume();
    child.kill('SIGKILL');
    await this.exited;
  }

  /** Freeze the server (SIGSTOP): connections stay open, commands hang. */
  pause(): void {
    if (!this.child || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** Unfreeze (SIGCONT). */
  resume(): void {
    if (!this.child || !this.paused) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** Kill the server and remove its folder. */
  async stop(): Promise<void> {
    await this.kill();
    this.removeDir();
  }

  /** @internal synchronous kill for the exit handler */
  killNow(): void {
    try {
      if (this.paused) this.child?.kill('SIGCONT');
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
