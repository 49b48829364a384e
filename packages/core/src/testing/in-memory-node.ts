/**
 * An in-memory Redis node for tests: it answers the commands and scripts the engine sends
 * (see in-memory-commands.ts) through the engine's client interface (node-client.ts), so a
 * `Redlock` over N of them runs the real algorithm (quorum, validity, retries, release notices,
 * watchdog, fencing) without a Redis server. It simulates the faults a lock must survive: a node
 * down (connections refused), slow (replies delayed) and restarted (empty, new `run_id`, empty
 * script cache).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  InMemoryReplyError,
  isKnownScript,
  MemoryKeyspace,
  runCommand,
  runScript,
  scriptArguments,
  scriptSha,
  type CommandContext,
} from './in-memory-commands.js';
import type { NodeClient, SubscriberClient } from '../nodes/node-client.js';

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
export class InMemoryRedisServer {
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

type Status = 'wait' | 'ready' | 'reconnecting' | 'end';

/**
 * A connection to an {@link InMemoryRedisServer}, in the engine's client interface. Commands
 * run when sent (atomically, like Redis' single thread) and their replies arrive after the
 * server's delay. A dropped connection fails the replies still on their way, as a socket does.
 */
export class InMemoryRedisClient extends EventEmitter implements NodeClient, SubscriberClient {
  private state: Status = 'wait';
  private readonly inFlight = new Map<NodeJS.Timeout, (err: Error) => void>();
  private readonly subscribed = new Set<string>();
  /** quit() waiting for the replies on their way. */
  private drainWaiters: Array<() => void> = [];
  readonly options: NonNullable<NodeClient['options']>;

  /** @internal use InMemoryRedisServer.client() */
  constructor(private readonly server: InMemoryRedisServer) {
    super();
    this.options = { path: server.name, commandTimeout: 1_000, enableOfflineQueue: false, maxRetriesPerRequest: 0 };
  }

  get status(): Status {
    return this.state;
  }

  connect(): Promise<void> {
    if (this.state === 'end') return Promise.reject(new Error('Connection is closed.'));
    if (this.state === 'ready') return Promise.resolve();
    if (!this.server.up) {
      this.state = 'reconnecting';
      const err = this.refused();
      this.emitError(err);
      return Promise.reject(err);
    }
    this.becomeReady();
    return Promise.resolve();
  }

  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.send('EVALSHA', [sha, numKeys, ...args]);
  }

  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.send('EVAL', [script, numKeys, ...args]);
  }

  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown> {
    return this.send('SET', [key, value, px, ms, nx]);
  }

  pttl(key: string): Promise<number> {
    return this.send('PTTL', [key]) as Promise<number>;
  }

  info(section: string): Promise<string> {
    return this.send('INFO', [section]) as Promise<string>;
  }

  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return this.send(command, args);
  }

  async subscribe(...channels: string[]): Promise<unknown> {
    const reply = this.send('PING', []); // an error while not connected, and the server's delay
    for (const channel of channels) {
      this.subscribed.add(channel);
      this.server.subscribe(this, channel);
    }
    await reply;
    return this.subscribed.size;
  }

  async unsubscribe(...channels: string[]): Promise<unknown> {
    for (const channel of channels) {
      this.subscribed.delete(channel);
      this.server.unsubscribe(this, channel);
    }
    await this.send('PING', []);
    return this.subscribed.size;
  }

  /** A new connection to the same node (for release notices), connected on first use. */
  duplicate(): InMemoryRedisClient {
    return this.server.client();
  }

  /** Ends the connection once the replies already on their way have arrived. */
  async quit(): Promise<unknown> {
    if (this.state === 'end') return 'OK';
    if (this.inFlight.size > 0) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    this.end();
    return 'OK';
  }

  /** Ends the connection at once; replies on their way are failed. */
  disconnect(): void {
    this.end();
  }

  /** @internal the server went down: the connection drops and reconnect attempts are refused. */
  dropped(): void {
    if (this.state !== 'ready') return;
    this.state = 'reconnecting';
    this.subscribed.clear();
    this.failInFlight(new Error('Connection is closed.'));
    this.emit('close');
    this.emit('reconnecting');
    this.emitError(this.refused());
  }

  /** @internal the server is back: a reconnecting client is ready again. */
  reconnected(): void {
    if (this.state === 'reconnecting') this.becomeReady();
  }

  /** @internal a release notice for a channel this connection subscribed to. */
  deliver(channel: string, message: string): void {
    this.later(() => this.emit('message', channel, message));
  }

  private send(command: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    if (this.state !== 'ready') {
      return Promise.reject(this.state === 'end' ? new Error('Connection is closed.') : this.refused());
    }
    let reply: unknown;
    let error: Error | undefined;
    try {
      reply = this.server.execute(command, args);
    } catch (err) {
      error = err instanceof Error ? err : new InMemoryReplyError(String(err));
    }
    return new Promise((resolve, reject) => this.later(() => (error === undefined ? resolve(reply) : reject(error)), reject));
  }

  /** Runs `deliver` after the server's delay (a microtask without one); `fail` if the connection drops first. */
  private later(deliver: () => void, fail: (err: Error) => void = () => undefined): void {
    const delay = this.server.delayMs;
    if (delay === 0) {
      queueMicrotask(() => {
        if (this.state === 'ready') deliver();
        else fail(new Error('Connection is closed.'));
      });
      return;
    }
    const timer = setTimeout(() => {
      this.inFlight.delete(timer);
      deliver();
      this.notifyDrained();
    }, delay);
    this.inFlight.set(timer, fail);
  }

  private failInFlight(err: Error): void {
    const pending = [...this.inFlight];
    this.inFlight.clear();
    for (const [timer, fail] of pending) {
      clearTimeout(timer);
      fail(err);
    }
    this.notifyDrained();
  }

  private notifyDrained(): void {
    if (this.inFlight.size > 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private becomeReady(): void {
    this.state = 'ready';
    this.emit('connect');
    this.emit('ready');
  }

  private end(): void {
    if (this.state === 'end') return;
    const wasOpen = this.state === 'ready';
    this.state = 'end';
    this.subscribed.clear();
    this.server.forget(this);
    this.failInFlight(new Error('Connection is closed.'));
    if (wasOpen) this.emit('close');
    this.emit('end');
  }

  private refused(): Error {
    return Object.assign(new Error(`connect ECONNREFUSED ${this.server.name}`), { code: 'ECONNREFUSED', syscall: 'connect' });
  }

  /** An 'error' with no listener would throw (EventEmitter); ioredis drops it silently too. */
  private emitError(err: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }
}
