/** The 5 redis-servers of one benchmark run, plus an admin connection to each for INFO commandstats. */
import { Redis } from 'ioredis';
import { RedisCluster } from '@redlock-nest/redis-process';

/** Commands of the benchmark itself, not of the library under test. */
const ADMIN = new Set(['info', 'config', 'flushall', 'client', 'hello', 'select', 'ping']);

export class BenchNodes {
  private constructor(
    private readonly cluster: RedisCluster,
    private readonly admin: Redis[],
  ) {}

  static async start(count: number): Promise<BenchNodes> {
    const cluster = await RedisCluster.start(count);
    const admin = cluster.urls.map((url) => new Redis(url));
    return new BenchNodes(cluster, admin);
  }

  get urls(): string[] {
    return this.cluster.urls;
  }

  async resetStats(): Promise<void> {
    await Promise.all(this.admin.map((c) => c.config('RESETSTAT')));
  }

  /**
   * Commands run on all nodes since the last reset, from INFO commandstats. Commands a
   * script runs (GET, SET, PUBLISH…) are counted too, as Redis counts them: it is the load.
   */
  async commands(): Promise<number> {
    let total = 0;
    for (const c of this.admin) {
      const info = await c.info('commandstats');
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        if (!ADMIN.has(m[1]!)) total += Number(m[2]);
      }
    }
    return total;
  }

  /** Freezes node `i` (SIGSTOP): its connections stay open, its commands hang. */
  pause(i: number): void {
    this.cluster.server(i).pause();
  }

  /** Unfreezes node `i` if it is paused. */
  resume(i: number): void {
    if (this.cluster.server(i).paused) this.cluster.server(i).resume();
  }

  async stop(): Promise<void> {
    await Promise.all(this.admin.map((c) => c.quit()));
    await this.cluster.stop();
  }
}
