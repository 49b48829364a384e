/**
 * An in-memory Redis node for tests: it answers the commands and scripts the engine sends
 * (see in-memory-commands.ts) through the engine's client interface (node-client.ts), so a
 * `Redlock` over N of them runs the real algorithm (quorum, validity, retries, release notices,
 * watchdog, fencing) without a Redis server. It simulates the faults a lock must survive: a node
 * down (connections refused), slow (replies delayed) and restarted (empty, new `run_id`, empty
 * script cache).
 */
import { randomBytes } from 'node:crypto';
import { InMemoryReplyError, MemoryKeyspace } from './in-memory-keyspace.js';
import { isKnownScript, runCommand, runScript, scriptArguments, scriptSha, type CommandContext } from './in-memory-commands.js';
import { InMemoryRedisClient, type InMemoryServerPort } from './in-memory-client.js';

let servers = 0;

/** Options of an {@link InMemoryRedisServer}. */
export interface InMemoryRedisServerOptions {
  /** How the node is labelled in outcomes, errors and events. Default `in-memory-<n>`. */
  readonly name?: string;
}

/**
 * One in-memory lock node. Pass its clients to a `Redlock` as nodes; the Redlock does not close
 * them (they are passed in): call {@link close} when done.
 *
 * @example
 * ```ts
 * import { Redlock } from '@redlock-nest/core';
 * import { InMemoryRedisServer } from '@redlock-nest/core/testing';
 *
 * const servers = [new InMemoryRedisServer(), new InMemoryRedisServer(), new InMemoryRedisServer()];
 * const redlock = new Redlock(servers.map((s) => s.client()));
 * servers[0]!.stop(); // a node down: locks still need 2 of 3
 * const lock = await redlock.acquire('order:1', 5_000);
 * await lock.release();
 * await redlock.close();
 * for (const s of servers) s.close();
 * ```
 */
export class InMemoryRedisServer implements InMemoryServerPort {
  readonly name: string;
  private readonly keyspace = new MemoryKeyspace();
  private readonly scriptCache = new Set<string>();
  private readonly clients = new Set<InMemoryRedisClient>();
  private readonly channels = new Map<string, Set<InMemoryRedisClient>>();
  private id = newRunId();
  private startedAt = performance.now();
  private running = true;
  private delay = 0;
  private readonly ctx: CommandContext = { keys: this.keyspace, publish: (channel, message) => this.publish(channel, message) };

  constructor(options: InMemoryRedisServerOptions = {}) {
    this.name = options.name ?? `in-memory-${servers++}`;
  }

  /** The server's `run_id`: a new one after each {@link restart}. */
  get runId(): string {
    return this.id;
  }

  /** Whether the node accepts connections (not {@link stop}ped). */
  get up(): boolean {
    return this.running;
  }

  /** How long each reply takes, ms (see {@link slow}). */
  get delayMs(): number {
    return this.delay;
  }

  /** A new client of this node, connected on first use (as the engine's own clients are). */
  client(): InMemoryRedisClient {
    const client = new InMemoryRedisClient(this);
    this.clients.add(client);
    return client;
  }

  /** Simulates the node down: connections drop and are refused until {@link start}. Its data stays. */
  stop(): void {
    if (!this.running) return;
    this.running = false;
    for (const client of this.clients) client.dropped();
    this.channels.clear();
  }

  /** Brings a stopped node back: clients reconnect (a `ready` each). */
  start(): void {
    if (this.running) return;
    this.running = true;
    for (const client of this.clients) client.reconnected();
  }

  /**
   * Simulates a restart without persistence: connections drop, then the node is back empty (no
   * keys, no fencing counters, no cached scripts) with a new `run_id` and uptime 0.
   */
  restart(): void {
    this.stop();
    this.keyspace.clear();
    this.scriptCache.clear();
    this.id = newRunId();
    this.startedAt = performance.now();
    this.start();
  }

  /** Delays every reply (and release notice) by `ms` from now on; 0 answers at once again. */
  slow(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`slow(ms) needs a delay ≥ 0 in ms, got ${String(ms)}`);
    this.delay = ms;
  }

  /** The value of `key`, read behind the engine's back (no delay, even while stopped). */
  get(key: string): string | undefined {
    return this.keyspace.get(key);
  }

  /** Sets `key` behind the engine's back (with a TTL in ms when given). */
  set(key: string, value: string, ttlMs?: number): void {
    this.keyspace.set(key, value, ttlMs);
  }

  /** Deletes `key` behind the engine's back; with `notify`, publishes a release notice on it as the release script does. */
  delete(key: string, notify = false): boolean {
    const deleted = this.keyspace.del(key) > 0;
    if (deleted && notify) this.publish(key, '1');
    return deleted;
  }

  /** Remaining TTL of `key` (PTTL: -2 absent, -1 without TTL). */
  pttl(key: string): number {
    return this.keyspace.pttl(key);
  }

  /**
   * The members of the sorted set `key` (a read lock's readers, waiting writers, a fair queue)
   * with their scores, lowest first, read behind the engine's back; empty when absent.
   */
  members(key: string): Array<{ readonly member: string; readonly score: number }> {
    return this.keyspace.zset(key)?.entries() ?? [];
  }

  /** Forgets every key (lock keys and fencing counters), as FLUSHALL; the run id stays. */
  clear(): void {
    this.keyspace.clear();
  }

  /** Closes every client of this node (pending replies are dropped, no timer is left). */
  close(): void {
    for (const client of [...this.clients]) client.disconnect();
  }

  /** @internal Runs one command for a client, atomically; throws an error reply. */
  execute(command: string, args: ReadonlyArray<string | number>): unknown {
    const name = command.toUpperCase();
    if (name === 'EVAL' || name === 'EVALSHA') {
      const [script, numKeys, ...rest] = args;
      const sha = name === 'EVAL' ? scriptSha(String(script)) : String(script).toLowerCase();
      if (name === 'EVAL') {
        if (!isKnownScript(sha)) throw new InMemoryReplyError('ERR the in-memory node runs only the scripts of @redlock-nest/core');
        this.scriptCache.add(sha);
      } else if (!this.scriptCache.has(sha)) {
        throw new InMemoryReplyError('NOSCRIPT No matching script. Please use EVAL.');
      }
      const { keys, args: argv } = scriptArguments(Number(numKeys), rest);
      return runScript(this.ctx, sha, keys, argv);
    }
    if (name === 'INFO') return this.info(String(args[0] ?? 'default'));
    return runCommand(this.ctx, name, args.map(String), (channel) => this.channels.get(channel)?.size ?? 0);
  }

  /** @internal */
  subscribe(client: InMemoryRedisClient, channel: string): void {
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(client);
  }

  /** @internal */
  unsubscribe(client: InMemoryRedisClient, channel?: string): void {
    for (const [name, set] of this.channels) {
      if (channel !== undefined && name !== channel) continue;
      set.delete(client);
      if (set.size === 0) this.channels.delete(name);
    }
  }

  /** @internal */
  forget(client: InMemoryRedisClient): void {
    this.unsubscribe(client);
    this.clients.delete(client);
  }

  private publish(channel: string, message: string): number {
    const subscribers = this.channels.get(channel);
    for (const client of subscribers ?? []) client.deliver(channel, message);
    return subscribers?.size ?? 0;
  }

  private info(section: string): string {
    const server = [
      '# Server',
      'redis_version:7.4.0',
      'redis_mode:standalone',
      `run_id:${this.id}`,
      `tcp_port:0`,
      `uptime_in_seconds:${Math.floor((performance.now() - this.startedAt) / 1_000)}`,
    ];
    const replication = ['# Replication', 'role:master', 'connected_slaves:0'];
    const persistence = ['# Persistence', 'aof_enabled:0'];
    const parts: Record<string, string[]> = { server, replication, persistence };
    const s = section.toLowerCase();
    const lines =
      s === 'default' || s === 'all' || s === 'everything' ? [...server, '', ...persistence, '', ...replication] : (parts[s] ?? []);
    return `${lines.join('\r\n')}\r\n`;
  }
}

function newRunId(): string {
  return randomBytes(20).toString('hex');
}
