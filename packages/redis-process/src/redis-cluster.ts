import { findRedisServer } from './redis-binary.js';
import { RedisServer, type RedisServerOptions } from './redis-server.js';

/**
 * N independent local Redis servers: separate processes, no replication between them
 * (what Redlock needs). Started in parallel; if one fails, the others are stopped.
 *
 * @example
 * ```ts
 * const cluster = await RedisCluster.start(5);
 * const redlock = new Redlock(cluster.urls);
 * await cluster.server(0).kill();
 * await cluster.stop();
 * ```
 */
export class RedisCluster {
  private constructor(
    readonly servers: readonly RedisServer[],
    /** The `redis-server` version, e.g. `7.0.15`. */
    readonly version: string,
  ) {}

  /** Finds redis-server (or throws how to install it) and starts `count` servers. */
  static async start(count: number, options: RedisServerOptions = {}): Promise<RedisCluster> {
    const { bin, version } = findRedisServer();
    const started = await Promise.allSettled(Array.from({ length: count }, () => RedisServer.start(options, bin)));
    const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(servers.map((s) => s.stop()));
      throw failed.reason;
    }
    return new RedisCluster(servers, version);
  }

  get urls(): string[] {
    return this.servers.map((s) => s.url);
  }

  server(i: number): RedisServer {
    const s = this.servers[i];
    if (!s) throw new Error(`no Redis server ${i}`);
    return s;
  }

  /** Resume paused servers and kill every process. */
  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}
