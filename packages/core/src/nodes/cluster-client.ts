/**
 * A Redis Cluster as one lock node: an ioredis `Cluster` passed in, or `{ cluster: startupNodes }`
 * from which the library creates one. The cluster routes each command to the master of its
 * key's slot (following MOVED and ASK while slots migrate), so the lock node talks to one
 * logical keyspace; keys are hash-tagged so a resource's keys share a slot (hash-slot.ts).
 */
import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';
import { clusterLabel, clusterStartupNodes, isClusterInput, type ClusterNodeInput } from './cluster-input.js';
import { hashSlot, keyNames, slotGroups, type KeyNames } from './hash-slot.js';
import type { ClusterNodeClient, NodeClientStream } from './node-client.js';
import { NodeRedisClusterAdapter } from './node-redis-cluster-client.js';
import { isNodeRedisCluster, nodeRedisClusterWarning, type NodeRedisClusterLike } from './node-redis-cluster-shape.js';
import { backstopTimeoutMs, toClient, type ClientHandle, type RedisNodeInput } from './redis-client.js';

/** Options every cluster this library creates gets, so a dead master fails fast (see failFastOptions). */
function clusterOptions(given: ClusterOptions | undefined, nodeTimeoutMs: number): ClusterOptions {
  const timeout = backstopTimeoutMs(nodeTimeoutMs);
  return {
    ...given,
    lazyConnect: true,
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    scaleReads: 'master',
    // Slot moves and failovers: follow MOVED/ASK, and retry a command while the cluster elects a new master.
    maxRedirections: given?.maxRedirections ?? 16,
    retryDelayOnFailover: given?.retryDelayOnFailover ?? 100,
    retryDelayOnTryAgain: given?.retryDelayOnTryAgain ?? 100,
    retryDelayOnClusterDown: given?.retryDelayOnClusterDown ?? 100,
    slotsRefreshTimeout: given?.slotsRefreshTimeout ?? timeout,
    clusterRetryStrategy: (times: number) => Math.min(50 * times, 1_000),
    redisOptions: {
      ...given?.redisOptions,
      maxRetriesPerRequest: 0,
      commandTimeout: given?.redisOptions?.commandTimeout ?? timeout,
      connectTimeout: given?.redisOptions?.connectTimeout ?? timeout,
      disconnectTimeout: 100,
    },
  };
}

/**
 * One Redis Cluster behind the client interface of a lock node. Commands go to the master
 * of their key's slot; `replicaAcks` sends `WAIT` to that same master on the connection the
 * lock command used (WAIT counts the writes of its own connection).
 */
export class ClusterClient implements ClusterNodeClient {
  readonly isClusterClient = true;
  /** The master sockets corked by the current tick (see `stream`). */
  private corkedSockets: Array<{ cork(): void; uncork(): void }> = [];

  /**
   * The masters' sockets, corked and uncorked together: LockNode holds a tick's writes back
   * (corkForTick), so a tick's commands leave in one write per master, as on a plain node.
   * ioredis routes a command to its master's socket synchronously once the cluster is ready.
   * Exactly the sockets corked are uncorked (a connection made during the tick is not corked).
   */
  readonly stream: NodeClientStream = {
    cork: () => {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- typed as always there, but unset until that connection's first connect
      this.corkedSockets = this.cluster.nodes('master').flatMap((node) => (node.stream ? [node.stream] : []));
      for (const socket of this.corkedSockets) socket.cork();
    },
    uncork: () => {
      const sockets = this.corkedSockets;
      this.corkedSockets = [];
      for (const socket of sockets) socket.uncork();
    },
  };

  constructor(
    readonly cluster: Cluster,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  get status(): string {
    return this.cluster.status;
  }

  get options(): { commandTimeout?: number } {
    const timeout = this.cluster.options.redisOptions?.commandTimeout;
    return timeout === undefined ? {} : { commandTimeout: timeout };
  }

  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.cluster.evalsha(sha, numKeys, ...args);
  }

  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.cluster.eval(script, numKeys, ...args);
  }

  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown> {
    return this.cluster.set(key, value, px, ms, nx);
  }

  pttl(key: string): Promise<number> {
    return this.cluster.pttl(key);
  }

  info(section: string): Promise<string> {
    return this.cluster.info(section);
  }

  /** `SPUBLISH` on the master of `channel`'s slot (a fair lock's hand-over notice, sent by the client). */
  spublish(channel: string, message: string): Promise<unknown> {
    return this.cluster.spublish(channel, message);
  }

  /**
   * Sharded subscribers of `channel` (`PUBSUB SHARDNUMSUB`) on the master of its slot, asked in
   * a pipeline with a read of the channel's name as a key so the cluster routes it there
   * (inspect: the waiters of a resource).
   */
  async shardSubscribers(channel: string): Promise<number> {
    const replies = await this.cluster.pipeline().pttl(channel).call('PUBSUB', 'SHARDNUMSUB', channel).exec();
    const [err, reply] = replies?.[1] ?? [new Error('no reply'), undefined];
    if (err) throw err;
    return Array.isArray(reply) ? Number(reply[1]) : 0;
  }

  /** A command to some master (diagnostics: checkNodes). */
  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return this.cluster.call(command, ...args);
  }

  /**
   * `WAIT replicas timeoutMs` on the master serving `key`'s slot, sent in a pipeline with a
   * read of `key` so the cluster routes it there (WAIT itself names no key). Resolves with the
   * number of replicas that acknowledged every write this connection made before.
   */
  async replicaAcks(key: string, replicas: number, timeoutMs: number): Promise<number> {
    const replies = await this.cluster.pipeline().pttl(key).wait(replicas, timeoutMs).exec();
    const [, acks] = replies?.[1] ?? [new Error('no reply'), 0];
    const err = replies?.[1]?.[0] ?? replies?.[0]?.[0];
    if (err) throw err;
    return Number(acks);
  }

  /** The master of `key`'s slot in ioredis' slot map (its first node). */
  masterOf(key: string): string | undefined {
    return this.cluster.slots[hashSlot(key)]?.[0];
  }

  /** The ids of every server of the cluster (masters and replicas), from `CLUSTER NODES`. */
  async memberIds(): Promise<string[]> {
    const reply = String(await this.cluster.call('CLUSTER', 'NODES'));
    return reply.split('\n').flatMap((line) => line.split(' ')[0] || []);
  }

  quit(): Promise<unknown> {
    return this.cluster.quit();
  }

  disconnect(): void {
    this.cluster.disconnect();
  }

  connect(): Promise<void> {
    return this.cluster.connect();
  }

  on(event: string, listener: (...args: unknown[]) => void): this {
    this.cluster.on(event, listener);
    return this;
  }

  once(event: string, listener: (...args: unknown[]) => void): this {
    this.cluster.once(event, listener);
    return this;
  }

  removeListener(event: string, listener: (...args: unknown[]) => void): this {
    this.cluster.removeListener(event, listener);
    return this;
  }

  /**
   * The release-notice subscriber: a second cluster connection with the same startup nodes and
   * options, subscribing by sharded pub/sub (`SSUBSCRIBE`, one connection per master, each
   * channel on its slot's master), so a release notice stays on its shard.
   */
  duplicate(override?: Record<string, unknown>): ShardedNoticeClient {
    const { autoResubscribe, ...rest } = override ?? {};
    const cluster = this.cluster.duplicate(undefined, {
      ...rest,
      shardedSubscribers: true,
      redisOptions: { ...this.cluster.options.redisOptions, ...(autoResubscribe === undefined ? {} : { autoResubscribe }) },
    } as ClusterOptions);
    return new ShardedNoticeClient(cluster, this.warn);
  }
}

/**
 * A cluster connection in sharded pub/sub mode, behind the subscriber interface of one node:
 * `subscribe` is `SSUBSCRIBE` per slot (one command may not span slots), messages are `smessage`.
 * On a server without sharded pub/sub (Redis < 7) the subscription fails: waiters poll, and one
 * warning says why.
 */
export class ShardedNoticeClient {
  private warned = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly warn: (message: string) => void,
  ) {}

  get status(): string {
    return this.cluster.status;
  }

  async subscribe(...channels: string[]): Promise<unknown> {
    try {
      return await Promise.all(slotGroups(channels, 1).map((g) => this.cluster.ssubscribe(...g.keys)));
    } catch (err) {
      if (!this.warned && err instanceof Error && /unknown command/i.test(err.message)) {
        this.warned = true;
        this.warn(
          'this Redis Cluster has no sharded pub/sub (SSUBSCRIBE needs Redis 7 or later): waiters on its locks poll instead of waking on release notices.',
        );
      }
      throw err;
    }
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return Promise.all(slotGroups(channels, 1).map((g) => this.cluster.sunsubscribe(...g.keys)));
  }

  on(event: string, listener: (...args: never[]) => void): this {
    this.cluster.on(event === 'message' ? 'smessage' : event, listener as (...args: unknown[]) => void);
    return this;
  }

  once(event: string, listener: () => void): this {
    this.cluster.once(event, listener);
    return this;
  }

  removeListener(event: string, listener: () => void): this {
    this.cluster.removeListener(event, listener);
    return this;
  }

  removeAllListeners(): this {
    this.cluster.removeAllListeners();
    return this;
  }

  connect(): Promise<void> {
    return this.cluster.connect();
  }

  quit(): Promise<unknown> {
    return this.cluster.quit();
  }

  disconnect(): void {
    this.cluster.disconnect();
  }
}

/** Whether a lock node's client is a Redis Cluster (ioredis' or node-redis' adapter). */
export function isClusterClient(client: unknown): client is ClusterNodeClient {
  return typeof client === 'object' && client !== null && (client as { isClusterClient?: unknown }).isClusterClient === true;
}

/** Turns a cluster entry of `nodes[]` into a lock node's client. */
export function toClusterClient(
  input: Cluster | ClusterNodeInput,
  index: number,
  nodeTimeoutMs: number,
  warn: (message: string) => void,
): ClientHandle {
  if ((input as { isCluster?: unknown }).isCluster === true) {
    const cluster = input as Cluster;
    const startup = clusterStartupNodes(cluster);
    return { client: new ClusterClient(cluster, warn), owned: false, label: clusterLabel(startup, index) };
  }
  const given = input as ClusterNodeInput;
  const cluster = new Cluster(given.cluster as ClusterNode[], clusterOptions(given.options, nodeTimeoutMs));
  return { client: new ClusterClient(cluster, warn), owned: true, label: clusterLabel(clusterStartupNodes(given), index) };
}

/** The key names of a Redlock over `nodes`: hash-tagged when any is a Redis Cluster (see hash-slot.ts). */
export function keyNamesFor(keyPrefix: string, nodes: ReadonlyArray<{ readonly client: unknown }>): KeyNames {
  return keyNames(
    keyPrefix,
    nodes.some((node) => isClusterClient(node.client)),
  );
}

export type { KeyNames };

/** A node-redis cluster passed in (the caller closes it), behind its adapter. */
function toNodeRedisClusterClient(
  cluster: NodeRedisClusterLike,
  index: number,
  nodeTimeoutMs: number,
  warn: (message: string) => void,
): ClientHandle {
  const label = clusterLabel(clusterStartupNodes(cluster), index);
  const warning = nodeRedisClusterWarning(cluster, label);
  if (warning) warn(warning);
  return { client: new NodeRedisClusterAdapter(cluster, backstopTimeoutMs(nodeTimeoutMs)), owned: false, label };
}

/** Turns one `nodes[]` entry, cluster or not, into a lock node's client. */
export function nodeHandle(input: unknown, index: number, nodeTimeoutMs: number, warn: (message: string) => void): ClientHandle {
  if (isNodeRedisCluster(input)) return toNodeRedisClusterClient(input, index, nodeTimeoutMs, warn);
  return isClusterInput(input)
    ? toClusterClient(input, index, nodeTimeoutMs, warn)
    : toClient(input as RedisNodeInput, index, nodeTimeoutMs, warn);
}
