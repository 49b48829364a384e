import { EtcdCluster, RedisCluster } from '@redlock-nest/redis-process';
import type { DemoOptions } from './demo-options.js';

/**
 * The lock store of one demo run, started by the demo and stopped at its end: 5 Redis nodes
 * (Redlock) or a 3-member etcd cluster. It also owns the faults injected half-way, since what
 * a store survives differs: Redlock loses 2 of 5 nodes (one killed, one paused), etcd its
 * leader (an election follows).
 */
export interface DemoStore {
  /** What the app instances need in their environment to lock on this store. */
  readonly env: Readonly<Record<string, string>>;
  /** One line for the banner: what runs where. */
  readonly banner: string;
  /** At 50 %: injects the faults; resolves with their description for the summary. */
  degrade(): Promise<string[]>;
  /** At 80 %: undoes what can be undone; resolves with a progress line. */
  recover(): Promise<string>;
  stop(): Promise<void>;
}

class RedisStore implements DemoStore {
  /** The last server is the price list's data Redis, never a lock node (see the launcher). */
  constructor(
    private readonly redis: RedisCluster,
    private readonly nodes: number,
  ) {}

  get lockNodes(): string[] {
    return this.redis.urls.slice(0, this.nodes);
  }

  get env(): Record<string, string> {
    return { LOCK_ENGINE: 'redis', REDLOCK_NODES: this.lockNodes.join(','), DATA_REDIS: this.redis.urls[this.nodes]! };
  }

  get banner(): string {
    return `${this.nodes} Redis nodes (redis-server ${this.redis.version}): ${this.lockNodes.join(' ')}; data Redis ${this.redis.urls[this.nodes]!}`;
  }

  async degrade(): Promise<string[]> {
    const killed = this.redis.server(0);
    const paused = this.redis.server(1);
    void killed.kill();
    paused.pause();
    return [`Redis node ${killed.url} killed (SIGKILL) at 50 %`, `Redis node ${paused.url} paused (SIGSTOP) at 50 %, resumed at 80 %`];
  }

  async recover(): Promise<string> {
    this.redis.server(1).resume();
    return `resumed Redis ${this.redis.server(1).url}`;
  }

  stop(): Promise<void> {
    return this.redis.stop();
  }
}

class EtcdStore implements DemoStore {
  private killed: EtcdCluster['members'][number] | undefined;

  constructor(private readonly etcd: EtcdCluster) {}

  get env(): Record<string, string> {
    return { LOCK_ENGINE: 'etcd', ETCD_HOSTS: this.etcd.hosts.join(',') };
  }

  get banner(): string {
    return `${this.etcd.members.length} etcd members: ${this.etcd.hosts.join(' ')}`;
  }

  async degrade(): Promise<string[]> {
    const leader = await this.etcd.leader();
    this.killed = leader;
    await leader.kill();
    return [`etcd leader ${leader.url} killed (SIGKILL) at 50 %, restarted at 80 %`];
  }

  async recover(): Promise<string> {
    const member = this.killed;
    if (!member) return 'no etcd member to restart';
    await member.start('existing');
    return `restarted etcd member ${member.url}; it rejoined as a follower`;
  }

  stop(): Promise<void> {
    return this.etcd.stop();
  }
}

/** Starts the store the options ask for. */
export async function startDemoStore(o: DemoOptions): Promise<DemoStore> {
  if (o.engine === 'etcd') {
    // etcd's own default timings (100 ms heartbeat, 1 s election): no spurious elections under the load.
    return new EtcdStore(await EtcdCluster.start({ members: o.nodes, heartbeatMs: 100, electionMs: 1_000, detached: true }));
  }
  return new RedisStore(await RedisCluster.start(o.nodes + 1, { detached: true }), o.nodes);
}
