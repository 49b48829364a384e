import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { reapLeftovers } from './leftovers.js';
import { EtcdMember, findEtcd } from './etcd-member.js';

/** Options of {@link EtcdCluster.start}. */
export interface EtcdClusterOptions {
  /** Members (default 3). */
  readonly members?: number;
  /** Raft heartbeat interval (default 50 ms) and election timeout (default 500 ms): short, so failovers in tests are quick. */
  readonly heartbeatMs?: number;
  readonly electionMs?: number;
  /**
   * Start the members in their own process groups, so a terminal's Ctrl-C reaches only the
   * parent, which can then release its locks and stop the members itself (a launcher).
   * Default false.
   */
  readonly detached?: boolean;
}

/**
 * A throw-away etcd cluster on free loopback ports (members in their own temp folders), killed
 * by PID at `stop()` and on process exit. For the tests, the chaos suite, the bench and the
 * sample app.
 *
 * @example
 * ```ts
 * const cluster = await EtcdCluster.start({ members: 3 });
 * const leader = await cluster.leader();
 * leader.pause(); // an election follows
 * await cluster.stop();
 * ```
 */
export class EtcdCluster {
  private constructor(
    readonly members: readonly EtcdMember[],
    private readonly dir: string,
  ) {}

  static async start(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    if (process.env.REDLOCK_NEST_UNIT) {
      throw new Error('REDLOCK_NEST_UNIT is set (npm run test:unit runs without servers): run this file with the full suite, npm test.');
    }
    reapLeftovers();
    const bin = findEtcd();
    const count = options.members ?? 3;
    const dir = mkdtempSync(join(tmpdir(), 'redlock-nest-etcd-'));
    const ports: Array<{ client: number; peer: number }> = [];
    const taken = new Set<number>();
    const fresh = async (): Promise<number> => {
      for (;;) {
        const port = await freePort();
        if (!taken.has(port)) {
          taken.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < count; i++) ports.push({ client: await fresh(), peer: await fresh() });
    const initialCluster = ports.map((p, i) => `m${i}=http://127.0.0.1:${p.peer}`).join(',');
    const members = ports.map(
      (p, i) =>
        new EtcdMember(
          {
            name: `m${i}`,
            clientPort: p.client,
            peerPort: p.peer,
            dir: join(dir, `m${i}`),
            initialCluster,
            heartbeatMs: options.heartbeatMs ?? 50,
            electionMs: options.electionMs ?? 500,
            detached: options.detached ?? false,
          },
          bin,
        ),
    );
    const cluster = new EtcdCluster(members, dir);
    try {
      await Promise.all(members.map((m) => m.start('new')));
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Client URLs of every member. */
  get hosts(): string[] {
    return this.members.map((m) => m.url);
  }

  /** The member that is leader now, as the running members report it. */
  async leader(): Promise<EtcdMember> {
    for (const m of this.members) {
      if (m.state !== 'running') continue;
      try {
        const res = await fetch(`${m.url}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1_000) });
        const status = (await res.json()) as { leader?: string; header?: { member_id?: string } };
        if (!status.leader || status.leader === '0') continue;
        if (status.leader === status.header?.member_id) return m;
        const members = await (await fetch(`${m.url}/v3/cluster/member/list`, { method: 'POST', body: '{}' })).json();
        const name = (members as { members?: Array<{ ID?: string; name?: string }> }).members?.find((x) => x.ID === status.leader)?.name;
        const leader = this.members.find((x) => x.name === name);
        if (leader) return leader;
      } catch {
        // this member cannot tell; ask the next
      }
    }
    throw new Error('no running member reports a leader');
  }

  /** Kills every member and removes their folders. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
