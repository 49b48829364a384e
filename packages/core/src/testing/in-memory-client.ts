import { EventEmitter } from 'node:events';
import type { NodeClient, SubscriberClient } from '../nodes/node-client.js';
import { InMemoryReplyError } from './in-memory-keyspace.js';

/** What a connection reads of, and tells, its in-memory server (in-memory-node.ts). @internal */
export interface InMemoryServerPort {
  readonly name: string;
  /** Whether the server accepts connections. */
  readonly up: boolean;
  /** The delay of every reply (ms). */
  readonly delayMs: number;
  /** Runs one command (atomically) and returns its reply; throws a Redis error reply. */
  execute(command: string, args: ReadonlyArray<string | number>): unknown;
  subscribe(client: InMemoryRedisClient, channel: string): void;
  unsubscribe(client: InMemoryRedisClient, channel?: string): void;
  /** The connection ended: drops its subscriptions. */
  forget(client: InMemoryRedisClient): void;
  /** A new connection to the same server. */
  client(): InMemoryRedisClient;
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
  constructor(private readonly server: InMemoryServerPort) {
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
