/**
 * The node-redis cluster adapter: a `createCluster()` client of the `redis` package (v5) as one
 * lock node, seen through the engine's client interface (node-client.ts) with the cluster
 * capabilities the engine asks of a Redis Cluster node (`replicaAcks`, `memberIds`).
 *
 * Structural, like the single-server adapter: nothing here imports `redis`, and the cluster
 * passed in is used as it is (its TLS and credentials in `defaults`, its reconnect strategy).
 * Every command is routed by its first key (node-redis follows MOVED and ASK itself); each
 * master's connection writes a tick's commands in one go on its own (node-redis batches
 * writes per `setImmediate`), so the engine's cork is not needed. Release notices use sharded
 * pub/sub (`sSubscribe`, Redis ≥ 7) on a duplicate of the cluster.
 *
 * node-redis refreshes its slot map only on MOVED/ASK. A master that dies answers neither, so
 * after a failover every command of its slots would keep going to the dead address: the
 * adapter asks for a refresh itself when a command fails without a Redis reply (or with
 * CLUSTERDOWN), as ioredis' Cluster does.
 */
import { EventEmitter } from 'node:events';
import { replyCode } from '../errors/error-hints.js';
import { hashSlot, slotGroups } from './hash-slot.js';
import type { ClusterNodeClient, SubscriberClient } from './node-client.js';
import type { NodeRedisClusterLike, Rediscovery } from './node-redis-cluster-shape.js';
import { remapped, withDeadline } from './node-redis-cluster-timeouts.js';

/** Commands without a key: sent to any master. The others are routed by their first argument. */
const KEYLESS = new Set(['INFO', 'PUBSUB', 'CONFIG', 'SCAN', 'TIME', 'CLUSTER', 'PING', 'SCRIPT', 'DBSIZE', 'CLIENT', 'ROLE', 'WAIT']);

/**
 * Cluster-level connection events under ioredis' names: `ready` once connected, `close` and
 * `end` once closed. A master's own reconnects are the cluster's business (each command that
 * meets one fails, and the engine counts the node as failed for that attempt).
 */
class ClusterForwarder extends EventEmitter {
  private state: 'wait' | 'connecting' | 'ready' | 'end';

  /** `timeoutMs` bounds connect() (and, in the command adapter, every command): see withDeadline. */
  constructor(
    protected readonly raw: NodeRedisClusterLike,
    protected readonly timeoutMs: number,
  ) {
    super();
    this.state = raw.isOpen ? 'ready' : 'wait';
    // An 'error' nobody listens to would be thrown: the cluster reports discovery failures
    // here, which commands and connect() already report to their callers.
    raw.on('error', () => undefined);
    raw.on('connect', () => {
      this.state = 'ready';
      this.emit('ready');
    });
    raw.on('disconnect', () => {
      if (this.state === 'end') return;
      this.state = 'end';
      this.emit('close');
      this.emit('end');
    });
  }

  get status(): string {
    return this.state;
  }

  /**
   * Connects a cluster that never was. Bounded: node-redis waits for every master's handshake,
   * and a paused master never answers it. After the bound, commands are sent all the same: node-redis
   * has its slot map by then (the masters that answer serve theirs), or fails them at once.
   */
  connect(): Promise<void> {
    if (this.raw.isOpen) return Promise.resolve();
    this.state = 'connecting';
    const connecting = this.raw.connect().then(
      () => undefined,
      (err: unknown) => {
        this.state = 'wait';
        throw err;
      },
    );
    return withDeadline(connecting, this.timeoutMs, 'connecting to the cluster');
  }

  quit(): Promise<unknown> {
    return this.raw.isOpen ? this.raw.close() : Promise.resolve('OK');
  }

  disconnect(): void {
    if (this.raw.isOpen) this.raw.destroy();
  }
}

/**
 * A node-redis cluster in the engine's client interface, as one lock node.
 *
 * @example
 * ```ts
 * import { createCluster } from 'redis';
 * import { Redlock } from '@redlock-nest/core';
 *
 * // Passed as it is (you close it): its commands fail fast with disableOfflineQueue.
 * const cluster = createCluster({ rootNodes: [{ url: 'redis://10.0.0.1:7000' }], defaults: { disableOfflineQueue: true } });
 * const redlock = new Redlock([cluster], { replicaSync: { replicas: 1, timeoutMs: 100 } });
 * ```
 */
export class NodeRedisClusterAdapter extends ClusterForwarder implements ClusterNodeClient {
  readonly isClusterClient = true;
  readonly options: NonNullable<ClusterNodeClient['options']>;
  private refreshing: Promise<unknown> | undefined;

  /** `timeoutMs`: the backstop of each command and of connect (the engine times each round itself, sooner). */
  constructor(raw: NodeRedisClusterLike, timeoutMs: number) {
    super(raw, timeoutMs);
    // The engine times each node itself; node-redis never retries a command on its own.
    this.options = {
      enableOfflineQueue: raw._options.defaults?.disableOfflineQueue !== true,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
    };
  }

  /** The node-redis cluster adapted. */
  get cluster(): NodeRedisClusterLike {
    return this.raw;
  }

  /** Sends `args` to the master of `key`'s slot (any master without a key); refreshes the slot map when a master seems gone. */
  private send(key: string | undefined, args: string[]): Promise<unknown> {
    return withDeadline(this.raw.sendCommand(key, false, args), this.timeoutMs, `cluster command ${args[0]}`).catch((err: unknown) => {
      const code = err instanceof Error ? replyCode(err.message) : undefined;
      if (code === undefined || code === 'CLUSTERDOWN') this.refreshSlots();
      throw remapped(err) ?? err;
    });
  }

  /** One slot-map refresh at a time, started from a master that is connected (node-redis falls back to the root nodes). */
  private refreshSlots(): void {
    const slots = (this.raw as unknown as Rediscovery)._slots;
    if (this.refreshing || typeof slots?.rediscover !== 'function' || !this.raw.isOpen) return;
    const live = this.raw.masters.find((m) => m.client?.isReady)?.client ?? { options: this.raw._options.rootNodes[0] };
    this.refreshing = slots
      .rediscover(live)
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
  }

  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.send(numKeys > 0 ? String(args[0]) : undefined, ['EVALSHA', sha, String(numKeys), ...args.map(String)]);
  }

  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.send(numKeys > 0 ? String(args[0]) : undefined, ['EVAL', script, String(numKeys), ...args.map(String)]);
  }

  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown> {
    return this.send(key, ['SET', key, value, px, String(ms), nx]);
  }

  /** Read from the master too (never a replica, which may lag). */
  pttl(key: string): Promise<number> {
    return this.send(key, ['PTTL', key]).then(Number);
  }

  info(section: string): Promise<string> {
    return this.send(undefined, ['INFO', section]).then(String);
  }

  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    const key = KEYLESS.has(command.toUpperCase()) || args.length === 0 ? undefined : String(args[0]);
    return this.send(key, [command, ...args.map(String)]);
  }

  /**
   * `WAIT replicas timeoutMs` on the master of `key`'s slot. node-redis keeps one connection
   * per master, so it is the connection the grant was written on (WAIT counts its writes).
   */
  replicaAcks(key: string, replicas: number, timeoutMs: number): Promise<number> {
    return this.send(key, ['WAIT', String(replicas), String(timeoutMs)]).then(Number);
  }

  /** `SPUBLISH` on the master of `channel`'s slot. */
  spublish(channel: string, message: string): Promise<unknown> {
    return this.send(channel, ['SPUBLISH', channel, message]);
  }

  /** `PUBSUB SHARDNUMSUB` on the master of `channel`'s slot (routed by the channel as its key). */
  async shardSubscribers(channel: string): Promise<number> {
    const reply = await this.send(channel, ['PUBSUB', 'SHARDNUMSUB', channel]);
    return Array.isArray(reply) ? Number(reply[1]) : 0;
  }

  /** The master of `key`'s slot in node-redis' slot map. */
  masterOf(key: string): string | undefined {
    return this.raw.slots[hashSlot(key)]?.master?.address;
  }

  /** The ids of every server of the cluster (masters and replicas), from `CLUSTER NODES`. */
  async memberIds(): Promise<string[]> {
    const reply = String(await this.send(undefined, ['CLUSTER', 'NODES']));
    return reply.split('\n').flatMap((line) => line.split(' ')[0] || []);
  }

  /** The release-notice subscriber: a duplicate cluster that opens only its sharded pub/sub connections. */
  duplicate(): SubscriberClient {
    return new NodeRedisShardedSubscriber(this.raw.duplicate({ minimizeConnections: true }), this.timeoutMs);
  }
}

/**
 * The release-notice connection of a node-redis cluster node, in the shape of an ioredis
 * subscriber: `subscribe` is `SSUBSCRIBE` per slot (node-redis routes a call by its first
 * channel, and one command may not span slots). node-redis resubscribes a master's channels
 * itself when that connection comes back; a notice sent meanwhile is lost, which costs a
 * waiter its poll delay (the notices only wake waiters, they never grant anything).
 */
class NodeRedisShardedSubscriber extends ClusterForwarder implements SubscriberClient {
  /** One listener for every channel: node-redis keeps a set per channel, so subscribing again adds nothing. */
  private readonly listener = (message: string, channel: string): void => {
    this.emit('message', channel, message);
  };

  subscribe(...channels: string[]): Promise<unknown> {
    return Promise.all(slotGroups(channels, 1).map((g) => this.raw.sSubscribe([...g.keys], this.listener)));
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return Promise.all(slotGroups(channels, 1).map((g) => this.raw.sUnsubscribe([...g.keys], this.listener)));
  }
}
