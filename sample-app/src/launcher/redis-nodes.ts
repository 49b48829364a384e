import { findRedisServer } from './redis-binary.js';
import { reapLeftovers } from './leftovers.js';
import { RedisNode } from './redis-node.js';

/** N independent local Redis servers: separate processes, no replication between them. */
export class LocalRedisNodes {
  private constructor(
    readonly nodes: readonly RedisNode[],
    readonly version: string,
  ) {}

  /** Finds redis-server (or throws how to install it) and starts `count` servers in parallel. */
  static async start(count: number): Promise<LocalRedisNodes> {
    const { bin, version } = findRedisServer();
    reapLeftovers();
    const started = await Promise.allSettled(Array.from({ length: count }, () => RedisNode.start(bin)));
    const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(nodes.map((n) => n.stop()));
      throw failed.reason;
    }
    return new LocalRedisNodes(nodes, version);
  }

  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  node(i: number): RedisNode {
    const n = this.nodes[i];
    if (!n) throw new Error(`no Redis node ${i}`);
    return n;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}
