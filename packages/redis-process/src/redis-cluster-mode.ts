import { cliCommand, pollUntil, redisCli } from './redis-cli.js';
import { RedisCluster } from './redis-cluster.js';
import type { RedisServer, RedisServerOptions } from './redis-server.js';

/** Options of a {@link RedisClusterMode}. */
export interface RedisClusterModeOptions extends RedisServerOptions {
  /**
   * Masters (shards). Default 3, the smallest cluster `redis-cli --cluster create` accepts; a
   * 1-shard cluster (one master serving every slot, no replica) is set up without it.
   */
  readonly masters?: number;
  /** Replicas per master. Default 1. */
  readonly replicas?: number;
  /** `cluster-node-timeout`: how long a master may be unreachable before its replica takes over. Default 1000. */
  readonly nodeTimeoutMs?: number;
}

/**
 * A real Redis Cluster on 127.0.0.1: `masters` cluster-mode servers plus `replicas` per
 * master, joined by `redis-cli --cluster create`, ready once every server reports
 * `cluster_state:ok` with every slot assigned and every replica's link up. Each server is a
 * {@link RedisServer} (killed by PID, pausable, restartable with its nodes.conf).
 *
 * Not the same thing as {@link RedisCluster}, which is N independent servers for Redlock.
 *
 * @example
 * ```ts
 * const cluster = await RedisClusterMode.start();
 * const redlock = new Redlock([{ cluster: cluster.urls }]);
 * await cluster.masterOfSlot(0).then((s) => s.kill()); // its replica takes over
 * await cluster.stop();
 * ```
 */
export class RedisClusterMode {
  private constructor(
    private readonly group: RedisCluster,
    readonly nodeTimeoutMs: number,
  ) {}

  static async start(options: RedisClusterModeOptions = {}): Promise<RedisClusterMode> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 1;
    const nodeTimeoutMs = options.nodeTimeoutMs ?? 1_000;
    const args = [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // A replica takes over however long its link was down: tests kill masters on purpose.
      '--cluster-replica-validity-factor',
      '0',
      ...(options.args ?? []),
    ];
    if (masters < 3 && (masters !== 1 || replicas !== 0)) {
      throw new Error(
        'RedisClusterMode: below 3 masters, only a 1-shard cluster without replicas ({ masters: 1, replicas: 0 }) can be set up',
      );
    }
    const group = await RedisCluster.start(masters * (replicas + 1), { ...options, args });
    const cluster = new RedisClusterMode(group, nodeTimeoutMs);
    if (masters === 1) {
      try {
        const port = group.servers[0]!.port;
        // Alone, a server never learns its own address from a peer: CLUSTER SLOTS would name it "".
        await cliCommand(port, 'CONFIG', 'SET', 'cluster-announce-ip', '127.0.0.1');
        await cliCommand(port, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
        await cluster.waitHealthy();
      } catch (err) {
        await group.stop();
        throw err;
      }
      return cluster;
    }
    try {
      await redisCli(
        [
          '--cluster',
          'create',
          ...group.servers.map((s) => `127.0.0.1:${s.port}`),
          '--cluster-replicas',
          String(replicas),
          '--cluster-yes',
        ],
        60_000,
      );
      await cluster.waitHealthy();
    } catch (err) {
      await group.stop();
      throw err;
    }
    return cluster;
  }

  /** Every server, masters and replicas (roles change with failovers). */
  get servers(): readonly RedisServer[] {
    return this.group.servers;
  }

  /** `redis://` URLs of every server: startup nodes for a cluster client. */
  get urls(): string[] {
    return this.group.urls;
  }

  /** The `redis-server` version, e.g. `7.0.15`. */
  get version(): string {
    return this.group.version;
  }

  /** Resolves once every running server says `cluster_state:ok`, all 16384 slots are served and every replica's link is up. */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const running = this.servers.filter((s) => s.state === 'running');
    await pollUntil(
      async () => {
        for (const server of running) {
          const info = await cliCommand(server.port, 'CLUSTER', 'INFO');
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false;
          const replication = await cliCommand(server.port, 'INFO', 'replication');
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up')) return false;
        }
        return true;
      },
      'the cluster to be healthy (cluster_state:ok, every slot served, replica links up)',
      timeoutMs,
    );
  }

  /** The server currently serving `slot` as master, as the first running server sees it. */
  async masterOfSlot(slot: number): Promise<RedisServer> {
    const asker = this.servers.find((s) => s.state === 'running');
    if (!asker) throw new Error('no server of the cluster is running');
    const reply = await cliCommand(asker.port, 'CLUSTER', 'NODES');
    for (const line of reply.split('\n')) {
      const fields = line.split(' ');
      if (!fields[2]?.includes('master') || fields[2].includes('fail')) continue;
      const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
      for (const range of fields.slice(8)) {
        const [from, to] = range.split('-').map(Number);
        if (from !== undefined && slot >= from && slot <= (to ?? from)) return this.byPort(port);
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** The servers that are replicas of `master` right now. */
  async replicasOf(master: RedisServer): Promise<RedisServer[]> {
    const info = await cliCommand(master.port, 'INFO', 'replication');
    return [...info.matchAll(/^slave\d+:ip=[^,]+,port=(\d+)/gm)].map((m) => this.byPort(Number(m[1])));
  }

  /** Whether `server` is a master right now. */
  async isMaster(server: RedisServer): Promise<boolean> {
    return (await cliCommand(server.port, 'INFO', 'replication')).includes('role:master');
  }

  /** Whether `server` is a replica whose link to its master is up (its initial sync done): WAIT counts it only then. */
  async isSyncedReplica(server: RedisServer): Promise<boolean> {
    const info = await cliCommand(server.port, 'INFO', 'replication');
    return info.includes('role:slave') && info.includes('master_link_status:up');
  }

  /**
   * Moves `slot` to the master `to`, keys included, as `redis-cli --cluster reshard` does for
   * each slot: IMPORTING on the target, MIGRATING on the source, MIGRATE of its keys in batches,
   * then the new owner announced to every master. Clients meanwhile get ASK and TRYAGAIN.
   */
  async migrateSlot(slot: number, to: RedisServer): Promise<void> {
    const from = await this.masterOfSlot(slot);
    if (from === to) return;
    const id = async (server: RedisServer): Promise<string> => (await cliCommand(server.port, 'CLUSTER', 'MYID')).trim();
    const [fromId, toId] = await Promise.all([id(from), id(to)]);
    await cliCommand(to.port, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
    await cliCommand(from.port, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
    for (;;) {
      const keys = (await cliCommand(from.port, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')).split('\n').filter((k) => k !== '');
      if (keys.length === 0) break;
      await cliCommand(from.port, 'MIGRATE', '127.0.0.1', String(to.port), '', '0', '5000', 'KEYS', ...keys);
    }
    // The target first, then the source, then everyone else (the order redis-cli uses).
    await cliCommand(to.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    await cliCommand(from.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    for (const server of this.servers) {
      if (server === to || server === from || server.state !== 'running' || !(await this.isMaster(server))) continue;
      await cliCommand(server.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    }
  }

  /**
   * `CLUSTER FAILOVER` on `replica`: a manual failover, which waits for the replica to catch up
   * with its master's replication offset before it takes over (no write is lost). Resolves once
   * `replica` is a master.
   */
  async failover(replica: RedisServer, timeoutMs = 30_000): Promise<void> {
    await cliCommand(replica.port, 'CLUSTER', 'FAILOVER');
    await pollUntil(() => this.isMaster(replica), `${replica.port} to take over as master (CLUSTER FAILOVER)`, timeoutMs);
  }

  /** The servers that are masters right now. */
  async masters(): Promise<RedisServer[]> {
    const running = this.servers.filter((s) => s.state === 'running');
    const flags = await Promise.all(running.map((s) => this.isMaster(s)));
    return running.filter((_, i) => flags[i]);
  }

  byPort(port: number): RedisServer {
    const server = this.servers.find((s) => s.port === port);
    if (!server) throw new Error(`no server of this cluster listens on port ${port}`);
    return server;
  }

  /** Resume paused servers and kill every process (by PID). */
  async stop(): Promise<void> {
    await this.group.stop();
  }
}
