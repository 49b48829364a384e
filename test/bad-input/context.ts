/**
 * What the bad-input rows run against: three real lock nodes, a password-protected
 * node, a replica, and a record of every owner token sent to the lock nodes (from
 * MONITOR) and every line logged, so the runner can check that none leaks.
 */
import { Redis } from 'ioredis';
import { Redlock, type RedisNodeInput, type RedlockOptions } from '@redlock-nest/core';
import { freePort, RedisCluster, RedisServer } from '../harness/redis-server.js';

/** The password of the protected node; it must never appear in a message or a log line. */
export const PASSWORD = 'pw-Bad1nput-S3cret';
export const WRONG_PASSWORD = 'pw-Wr0ng-Guess';
const SCRIPT_COMMANDS = new Set(['evalsha', 'eval']);

export class BadInputContext {
  /** Owner tokens seen on the wire (ARGV[1] of every lock script). */
  readonly tokens = new Set<string>();
  /** Every line the library (or anything) logged, and every onWarning message. */
  readonly logged: string[] = [];
  private readonly redlocks: Redlock[] = [];
  private readonly monitors: Redis[] = [];

  private constructor(
    readonly cluster: RedisCluster,
    readonly secured: RedisServer,
    readonly replica: RedisServer,
    /** A port nothing listens on. */
    readonly deadPort: number,
    /** Another one: one server listed twice is refused at construction. */
    readonly otherDeadPort: number,
  ) {}

  static async start(): Promise<BadInputContext> {
    const cluster = await RedisCluster.start(3);
    const secured = await RedisServer.start({ args: ['--requirepass', PASSWORD] });
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(cluster.server(0).port)] });
    const ctx = new BadInputContext(cluster, secured, replica, await freePort(), await freePort());
    for (const url of cluster.urls) await ctx.watchTokens(url);
    return ctx;
  }

  get urls(): string[] {
    return this.cluster.urls;
  }

  get securedUrl(): string {
    return `redis://:${PASSWORD}@127.0.0.1:${this.secured.port}`;
  }

  get wrongPasswordUrl(): string {
    return `redis://:${WRONG_PASSWORD}@127.0.0.1:${this.secured.port}`;
  }

  get deadUrl(): string {
    return `redis://127.0.0.1:${this.deadPort}`;
  }

  get otherDeadUrl(): string {
    return `redis://127.0.0.1:${this.otherDeadPort}`;
  }

  /** A Redlock closed by `closeAll()`; its warnings are recorded. */
  redlock(nodes: ReadonlyArray<RedisNodeInput> = this.urls, options: RedlockOptions = {}): Redlock {
    // Options that are not an object go in as they are: rows test how they are refused.
    const merged =
      typeof options === 'object' && options !== null
        ? { nodeTimeoutMs: 300, onWarning: (m: string) => this.logged.push(m), ...options }
        : options;
    const r = new Redlock(nodes, merged);
    this.redlocks.push(r);
    return r;
  }

  /** Lock keys still present on the lock nodes (fence counters are meant to stay). */
  async lockKeysLeft(): Promise<string[]> {
    const left: string[] = [];
    for (const url of this.urls) {
      const c = new Redis(url);
      try {
        left.push(...(await c.keys('*lock:*')));
      } finally {
        c.disconnect();
      }
    }
    return left;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.redlocks.splice(0).map((r) => r.close()));
  }

  async stop(): Promise<void> {
    await this.closeAll();
    for (const m of this.monitors) m.disconnect();
    await this.cluster.stop();
    await this.secured.stop();
    await this.replica.stop();
  }

  private async watchTokens(url: string): Promise<void> {
    const client = new Redis(url);
    const monitor = await client.monitor();
    client.disconnect();
    monitor.on('monitor', (_time: string, args: string[]) => {
      // EVALSHA sha numkeys key... token ...: the token is the first argument after the keys.
      if (!SCRIPT_COMMANDS.has(String(args[0]).toLowerCase())) return;
      const numKeys = Number(args[2]);
      const token = args[3 + numKeys];
      if (token && token.length >= 20) this.tokens.add(token);
    });
    this.monitors.push(monitor);
  }
}
