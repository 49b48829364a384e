import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { MARKER, rememberPid } from './leftovers.js';

const live = new Set<EtcdMember>();

// However this process exits, no etcd it started outlives it.
process.on('exit', () => {
  for (const member of live) member.killNow();
});

/** The `etcd` binary (Debian's etcd-server package), or an error naming the install line. */
export function findEtcd(): string {
  const found = spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error('etcd is not installed: apt-get install -y etcd-server etcd-client (etcd 3.4).');
  return found;
}

/** What a member is started with: its ports, folder and the cluster it joins. */
export interface EtcdMemberSpec {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dir: string;
  /** `name=http://127.0.0.1:peerPort,...` of every member. */
  readonly initialCluster: string;
  /** Raft heartbeat and election timeout (ms). */
  readonly heartbeatMs: number;
  readonly electionMs: number;
  /** Own process group (see `EtcdClusterOptions.detached`). */
  readonly detached?: boolean;
}

/**
 * The time of a zap log line (`--logger=zap`) saying this member knows a leader (`raft.node: <id>
 * elected leader <id> at term <n>`, also when it is the leader), read from its `ts` field; undefined
 * for any other line.
 */
export function leaderLineTime(line: string): number | undefined {
  if (!line.includes('elected leader')) return undefined;
  try {
    const entry = JSON.parse(line) as { ts?: unknown; msg?: unknown };
    if (typeof entry.msg !== 'string' || !/^raft\.node: \S+ elected leader /.test(entry.msg)) return undefined;
    const at = typeof entry.ts === 'string' ? Date.parse(entry.ts) : typeof entry.ts === 'number' ? entry.ts * 1000 : NaN;
    return Number.isFinite(at) ? at : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One etcd member process on loopback ports, killed by PID. Fault injection: kill (SIGKILL),
 * pause (SIGSTOP), resume (SIGCONT), restart (same data folder and ports: it rejoins).
 */
export class EtcdMember {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private isPaused = false;
  private lastLeaderKnownAt: number | undefined;

  constructor(
    readonly spec: EtcdMemberSpec,
    private readonly bin: string,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  /** The member's client URL. */
  get url(): string {
    return `http://127.0.0.1:${this.spec.clientPort}`;
  }

  /**
   * When the member, as last started, first knew a leader: the time its log line says (the
   * member's own clock, to the millisecond), not when this process read the line. From then on
   * it counts in the cluster's quorum. It serves clients only later, after publishing itself
   * through raft, which a loaded machine can delay by seconds (a retried proposal): a window
   * "while a majority was down" that ends at `start()`'s resolution would outlast the majority's
   * return, and make a grant by the healthy majority look illegal. Undefined before a start
   * resolved, or when no such line was read.
   */
  get leaderKnownAt(): number | undefined {
    return this.lastLeaderKnownAt;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get state(): 'running' | 'paused' | 'killed' {
    if (!this.child) return 'killed';
    return this.isPaused ? 'paused' : 'running';
  }

  /**
   * Spawns the member; resolves once it logs that it serves clients (which it does only after
   * the cluster has a leader, so start a majority together).
   */
  start(state: 'new' | 'existing' = 'new'): Promise<void> {
    const s = this.spec;
    const args = [
      `--name=${s.name}`,
      `--data-dir=${s.dir}`,
      `--listen-client-urls=${this.url}`,
      `--advertise-client-urls=${this.url}`,
      `--listen-peer-urls=http://127.0.0.1:${s.peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${s.peerPort}`,
      `--initial-cluster=${s.initialCluster}`,
      `--initial-cluster-state=${state}`,
      '--initial-cluster-token=redlock-nest-test',
      `--heartbeat-interval=${s.heartbeatMs}`,
      `--election-timeout=${s.electionMs}`,
      '--logger=zap',
      '--log-outputs=stderr',
    ];
    const child = spawn(this.bin, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, [MARKER]: '1' },
      detached: s.detached ?? false,
    });
    this.child = child;
    this.isPaused = false;
    this.lastLeaderKnownAt = undefined;
    live.add(this);
    if (child.pid) rememberPid(child.pid);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      let log = '';
      let partial = '';
      const onData = (chunk: Buffer): void => {
        const text = chunk.toString();
        log = (log + text).slice(-4000);
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        if (this.lastLeaderKnownAt === undefined) {
          for (const line of lines) {
            const at = leaderLineTime(line);
            if (at !== undefined) {
              this.lastLeaderKnownAt = at;
              break;
            }
          }
        }
        if (/ready to serve client requests|serving client traffic/.test(log)) {
          child.stderr.off('data', onData);
          child.stderr.resume();
          resolve();
        }
      };
      child.stderr.on('data', onData);
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (this.child === child) {
          this.child = undefined;
          live.delete(this);
        }
        reject(new Error(`etcd ${s.name} exited (${signal ?? `code ${code}`}): ${log.slice(-600)}`));
      });
    });
  }

  /** SIGKILL (a crash) and wait until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.isPaused) this.resume();
    child.kill('SIGKILL');
    await this.exited;
    this.child = undefined;
    live.delete(this);
  }

  /** SIGSTOP: sockets stay open, nothing answers (a stalled member). */
  pause(): void {
    if (!this.child || this.isPaused) return;
    this.child.kill('SIGSTOP');
    this.isPaused = true;
  }

  resume(): void {
    if (!this.child || !this.isPaused) return;
    this.child.kill('SIGCONT');
    this.isPaused = false;
  }

  /**
   * Kill and start again with the same data and ports. Resolves once it serves clients, which
   * needs a leader: with a majority down, restart them together.
   */
  async restart(): Promise<void> {
    await this.kill();
    await this.start('existing');
  }

  /** @internal synchronous kill, for the exit handler */
  killNow(): void {
    try {
      if (this.isPaused) this.child?.kill('SIGCONT');
      this.child?.kill('SIGKILL');
    } catch {
      // already gone
    }
    rmSync(this.spec.dir, { recursive: true, force: true });
  }
}
