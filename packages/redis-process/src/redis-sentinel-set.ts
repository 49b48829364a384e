import { cliCommand, pollUntil } from './redis-cli.js';
import { findRedisServer } from './redis-binary.js';
import { RedisServer, type RedisServerOptions } from './redis-server.js';

/** Options of a {@link RedisSentinelSet}. */
export interface RedisSentinelSetOptions extends RedisServerOptions {
  /** Replicas of the master. Default 1. */
  readonly replicas?: number;
  /** Sentinels (quorum is a majority of them). Default 3. */
  readonly sentinels?: number;
  /** The master's name in Sentinel. Default `mymaster`. */
  readonly name?: string;
  /** `down-after-milliseconds`. Default 1000. */
  readonly downAfterMs?: number;
}

/**
 * A Sentinel-managed Redis on 127.0.0.1: one master, `replicas` replicas and `sentinels`
 * Sentinel processes (`redis-server --sentinel`), every one a {@link RedisServer} killed by
 * PID. Ready once every Sentinel knows every replica and the other Sentinels.
 *
 * @example
 * ```ts
 * const set = await RedisSentinelSet.start();
 * const client = new Redis({ sentinels: set.sentinelAddresses, name: set.name });
 * await set.failover(); // SENTINEL FAILOVER, resolves once a replica was promoted
 * await set.stop();
 * ```
 */
export class RedisSentinelSet {
  private constructor(
    readonly name: string,
    /** The data servers; index 0 started as the master. */
    readonly servers: readonly RedisServer[],
    readonly sentinels: readonly RedisServer[],
  ) {}

  static async start(options: RedisSentinelSetOptions = {}): Promise<RedisSentinelSet> {
    const { bin } = findRedisServer();
    const name = options.name ?? 'mymaster';
    const replicaCount = options.replicas ?? 1;
    const sentinelCount = options.sentinels ?? 3;
    const started: RedisServer[] = [];
    try {
      const master = await RedisServer.start(options, bin);
      started.push(master);
      const replicas = await Promise.all(
        Array.from({ length: replicaCount }, () =>
          RedisServer.start({ ...options, args: [...(options.args ?? []), '--replicaof', '127.0.0.1', String(master.port)] }, bin),
        ),
      );
      started.push(...replicas);
      const quorum = Math.floor(sentinelCount / 2) + 1;
      const config = [
        `sentinel monitor ${name} 127.0.0.1 ${master.port} ${quorum}`,
        `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1_000}`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n');
      const sentinels = await Promise.all(Array.from({ length: sentinelCount }, () => RedisServer.start({ sentinelConfig: config }, bin)));
      started.push(...sentinels);
      const set = new RedisSentinelSet(name, [master, ...replicas], sentinels);
      await set.waitSettled();
      return set;
    } catch (err) {
      await Promise.all(started.map((s) => s.stop()));
      throw err;
    }
  }

  /** `{ host, port }` of every Sentinel, as ioredis' `sentinels` option takes them. */
  get sentinelAddresses(): Array<{ host: string; port: number }> {
    return this.sentinels.map((s) => ({ host: s.host, port: s.port }));
  }

  /** The data server the Sentinels currently name as master. */
  async master(): Promise<RedisServer> {
    for (const sentinel of this.sentinels) {
      if (sentinel.state !== 'running') continue;
      const reply = await cliCommand(sentinel.port, 'SENTINEL', 'get-master-addr-by-name', this.name);
      const port = Number(reply.trim().split('\n')[1]);
      const server = this.servers.find((s) => s.port === port);
      if (server) return server;
    }
    throw new Error(`no running Sentinel names a master for ${this.name}`);
  }

  /** Resolves once every running Sentinel knows every replica and every other Sentinel, and every replica's link is up. */
  async waitSettled(timeoutMs = 30_000): Promise<void> {
    const master = await this.master();
    await pollUntil(
      async () => {
        for (const sentinel of this.sentinels) {
          if (sentinel.state !== 'running') continue;
          const reply = await cliCommand(sentinel.port, 'SENTINEL', 'master', this.name);
          const fields = reply.trim().split('\n');
          const field = (key: string): string | undefined => fields[fields.indexOf(key) + 1];
          if (Number(field('port')) !== master.port || !/^master$/.test(field('flags') ?? '')) return false;
          if (Number(field('num-slaves')) < this.servers.length - 1) return false;
          if (Number(field('num-other-sentinels')) < this.sentinels.length - 1) return false;
        }
        for (const server of this.servers) {
          if (server === master || server.state !== 'running') continue;
          const info = await cliCommand(server.port, 'INFO', 'replication');
          if (!info.includes('master_link_status:up') || !info.includes(`master_port:${master.port}`)) return false;
        }
        return true;
      },
      `the Sentinels of ${this.name} to settle`,
      timeoutMs,
    );
  }

  /**
   * `SENTINEL FAILOVER`: promotes a replica without waiting for the master to fail.
   * Resolves with the new master once every running Sentinel names it and a replica's link to it
   * is up. The demoted master follows later (a Sentinel reconfigures it on its next look, up to
   * 10 s): with one replica, that is the replica waited for; call {@link waitSettled} to wait for all.
   */
  async failover(): Promise<RedisServer> {
    const before = await this.master();
    const sentinel = this.sentinels.find((s) => s.state === 'running');
    if (!sentinel) throw new Error('no Sentinel is running');
    await cliCommand(sentinel.port, 'SENTINEL', 'FAILOVER', this.name);
    // Set by the check that passes (a closure: declared with its type, not narrowed to undefined).
    let found = undefined as RedisServer | undefined;
    await pollUntil(
      async () => {
        let promoted: RedisServer | undefined;
        for (const s of this.sentinels) {
          if (s.state !== 'running') continue;
          const reply = await cliCommand(s.port, 'SENTINEL', 'get-master-addr-by-name', this.name);
          const named = this.servers.find((server) => server.port === Number(reply.trim().split('\n')[1]));
          if (!named || named === before || (promoted && named !== promoted)) return false;
          promoted = named;
        }
        if (!promoted) return false;
        for (const server of this.servers) {
          if (server === promoted || server.state !== 'running') continue;
          const info = await cliCommand(server.port, 'INFO', 'replication');
          if (info.includes('master_link_status:up') && info.includes(`master_port:${promoted.port}`)) {
            found = promoted;
            return true;
          }
        }
        return false;
      },
      `a new master of ${this.name}, named by every Sentinel, with a replica`,
      30_000,
    );
    if (!found) throw new Error(`no new master of ${this.name}`);
    return found;
  }

  /** Resume paused processes and kill every one (by PID). */
  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((s) => s.stop()));
  }
}
