/**
 * The node-redis adapter: a client of the `redis` package (v5 `createClient()`, v4 alike) seen
 * through the engine's client interface (node-client.ts). Structural: nothing here imports
 * `redis`, so users without it are unaffected, and the client passed in is used as it is (its
 * TLS, credentials and reconnect strategy). node-redis pipelines each tick's commands itself,
 * so the engine's cork is not needed; release notices use a duplicate of the client, as
 * node-redis requires for pub/sub.
 */
import { EventEmitter } from 'node:events';
import type { NodeClient, SubscriberClient } from './node-client.js';
import { looksLikeNodeRedisCluster } from './node-redis-cluster-shape.js';

/** The part of a node-redis client the adapter uses. */
export interface NodeRedisClientLike {
  sendCommand(args: string[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  /** v5: closes after pending replies. */
  close?(): Promise<unknown>;
  /** v5: closes at once. */
  destroy?(): void;
  /** v4 (deprecated in v5). */
  quit?(): Promise<unknown>;
  /** v4 (deprecated in v5). */
  disconnect?(): Promise<unknown>;
  duplicate(): NodeRedisClientLike;
  subscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  readonly options?: {
    readonly url?: string;
    readonly disableOfflineQueue?: boolean;
    readonly socket?: { readonly host?: string; readonly port?: number; readonly path?: string };
  };
}

/** Whether `value` is a node-redis client (`createClient()`): `sendCommand` plus `isOpen`/`isReady`, and not a cluster (node-redis-cluster-client.ts). */
export function isNodeRedisClient(value: unknown): value is NodeRedisClientLike {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.sendCommand === 'function' &&
    'isOpen' in v &&
    'isReady' in v &&
    ['connect', 'on', 'off', 'duplicate', 'subscribe', 'unsubscribe'].every((m) => typeof v[m] === 'function') &&
    !looksLikeNodeRedisCluster(value)
  );
}

/** Where a node-redis client connects (its socket options, or its URL). */
export function nodeRedisAddress(client: NodeRedisClientLike): { host?: string; port?: number; path?: string } {
  const socket = client.options?.socket;
  if (socket?.path) return { path: socket.path };
  if (socket?.host !== undefined || socket?.port !== undefined) {
    return { host: socket.host ?? 'localhost', port: Number(socket.port ?? 6379) };
  }
  const url = client.options?.url;
  if (url) {
    try {
      const parsed = new URL(url);
      return { host: parsed.hostname || 'localhost', port: Number(parsed.port || 6379) };
    } catch {
      return {};
    }
  }
  return {};
}

/** ioredis' status words from node-redis' flags. */
function statusOf(raw: NodeRedisClientLike, connectCalled: boolean): string {
  if (raw.isReady) return 'ready';
  if (raw.isOpen) return 'reconnecting';
  return connectCalled ? 'end' : 'wait';
}

/**
 * Forwards a node-redis client's connection events under ioredis' names: `ready`, `error`,
 * `close` (the connection dropped: node-redis says `reconnecting`, or `end`), `end`.
 */
class Forwarder extends EventEmitter {
  protected connectCalled: boolean;
  /** Our listeners on the client we wrap, for detach(). */
  private readonly forwarded: Array<[string, (...args: unknown[]) => void]> = [];

  constructor(protected readonly raw: NodeRedisClientLike) {
    super();
    this.connectCalled = raw.isOpen;
    this.forward('ready', () => this.emit('ready'));
    // node-redis throws an 'error' nobody listens to: this listener is always there (until detach()).
    this.forward('error', (err: unknown) => {
      if (this.listenerCount('error') > 0) this.emit('error', err);
    });
    this.forward('reconnecting', () => this.emit('close'));
    this.forward('end', () => {
      this.emit('close');
      this.emit('end');
    });
  }

  private forward(event: string, listener: (...args: unknown[]) => void): void {
    this.forwarded.push([event, listener]);
    this.raw.on(event, listener);
  }

  /**
   * Removes our listeners from the client we wrap, when its Redlock closes: the client was
   * passed in and outlives this adapter. Its owner keeps its own 'error' listener.
   */
  detach(): void {
    for (const [event, listener] of this.forwarded.splice(0)) this.raw.off(event, listener);
  }

  get status(): string {
    return statusOf(this.raw, this.connectCalled);
  }

  /**
   * Connects a client that never was; settles at the first outcome (ready, or the first
   * error), as ioredis' connect() does, while node-redis goes on reconnecting on its own.
   */
  connect(): Promise<void> {
    if (this.raw.isOpen) return Promise.resolve();
    this.connectCalled = true;
    return new Promise<void>((resolve, reject) => {
      const done = (err?: unknown): void => {
        this.raw.off('ready', onReady);
        this.raw.off('error', onError);
        if (err === undefined) resolve();
        else reject(err instanceof Error ? err : new Error(`connect failed: ${JSON.stringify(err)}`));
      };
      const onReady = (): void => done();
      const onError = (err: unknown): void => done(err);
      this.raw.on('ready', onReady);
      this.raw.on('error', onError);
      this.raw.connect().catch(onError);
    });
  }

  quit(): Promise<unknown> {
    if (!this.raw.isOpen) return Promise.resolve('OK');
    return this.raw.close ? this.raw.close() : (this.raw.quit?.() ?? Promise.resolve('OK'));
  }

  disconnect(): void {
    if (!this.raw.isOpen) return;
    if (this.raw.destroy) this.raw.destroy();
    else void this.raw.disconnect?.();
  }
}

/**
 * A node-redis client in the engine's client interface.
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { Redlock } from '@redlock-nest/core';
 *
 * // Passed as it is: the adapter is applied by the Redlock.
 * const redlock = new Redlock([createClient({ url: 'redis://a:6379', disableOfflineQueue: true })]);
 * ```
 */
export class NodeRedisAdapter extends Forwarder implements NodeClient {
  readonly options: NonNullable<NodeClient['options']>;

  constructor(raw: NodeRedisClientLike) {
    super(raw);
    // No command timeout of its own: the engine times each node itself (maxRetriesPerRequest
    // is ioredis' word for "commands are not retried", which node-redis never does).
    this.options = { ...nodeRedisAddress(raw), enableOfflineQueue: raw.options?.disableOfflineQueue !== true, maxRetriesPerRequest: 0 };
  }

  /** The node-redis client adapted. */
  get client(): NodeRedisClientLike {
    return this.raw;
  }

  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.raw.sendCommand(['EVALSHA', sha, String(numKeys), ...args.map(String)]);
  }

  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.raw.sendCommand(['EVAL', script, String(numKeys), ...args.map(String)]);
  }

  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown> {
    return this.raw.sendCommand(['SET', key, value, px, String(ms), nx]);
  }

  pttl(key: string): Promise<number> {
    return this.raw.sendCommand(['PTTL', key]).then(Number);
  }

  info(section: string): Promise<string> {
    return this.raw.sendCommand(['INFO', section]).then(String);
  }

  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return this.raw.sendCommand([command, ...args.map(String)]);
  }

  /** A subscriber connection: node-redis' duplicate of the client (same socket options, TLS, credentials). */
  duplicate(): SubscriberClient {
    return new NodeRedisSubscriber(this.raw.duplicate());
  }
}

/** The release-notice connection of a node-redis node, in the shape of an ioredis subscriber. */
class NodeRedisSubscriber extends Forwarder implements SubscriberClient {
  /** One listener for every channel: node-redis keeps a set per channel, so subscribing again adds nothing. */
  private readonly listener = (message: string, channel: string): void => {
    this.emit('message', channel, message);
  };

  subscribe(...channels: string[]): Promise<unknown> {
    // node-redis resubscribes on reconnect before 'ready'; a channel it already has resolves at once.
    return this.raw.subscribe(channels, this.listener);
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.raw.unsubscribe(channels, this.listener);
  }
}
