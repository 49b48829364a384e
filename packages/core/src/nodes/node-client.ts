/**
 * The one client interface the engine talks to a lock node through. Everything in the core that
 * reaches a node (LockNode, the release notices, the connection state, the independence and
 * restart checks, the node probe, the operator tools) uses only what is declared here.
 *
 * Its shape is ioredis' (the default client, passed through as it is, with no wrapper on the hot
 * path). Other clients are adapted to it, each adapter in its own file next to this one:
 * - ioredis `Redis`: the interface itself (redis-client.ts creates it from URLs and options);
 * - node-redis v5 `createClient()`: node-redis-client.ts;
 * - a Redis Cluster (ioredis `Cluster`: cluster-client.ts; node-redis `createCluster()`:
 *   node-redis-cluster-client.ts), which adds the members of {@link ClusterNodeClient};
 * - the in-memory node for tests: in-memory-node.ts.
 *
 * An adapter for another client implements the required members and the optional ones it can:
 * without `duplicate` waiters poll instead of getting release notices; without `stream.cork`
 * each tick's commands are not batched by the engine (a client may batch on its own); without
 * `call` the operator tools that need generic commands report them as unavailable.
 */

/** The connection of a node's release notices: a duplicate of the command client in subscriber mode. */
export interface SubscriberClient {
  readonly status?: string;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  removeAllListeners(): unknown;
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  once(event: 'end', listener: () => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
}

/** The socket of a client, when it exposes one: corked per tick by the engine, read for writability. */
export interface NodeClientStream {
  cork?(): void;
  uncork?(): void;
  readonly writable?: boolean;
  on?(event: string, listener: () => void): unknown;
}

/**
 * What the engine needs of one node's command connection.
 *
 * Connection state, as ioredis names it in `status`: `wait` (never connected, the engine
 * connects it on first use), `connecting` / `connect` / `reconnecting`, `ready` (commands are
 * written at once), `end` (closed). Events: `ready` on every (re)connect (the script cache may
 * be empty: scripts are sent in full again), `error` with the connection's cause, `close` when
 * the connection drops, `end` when it is closed for good.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import type { NodeClient } from '@redlock-nest/core';
 *
 * const client: NodeClient = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
 * ```
 */
export interface NodeClient {
  /** Runs a cached script; rejects with an error whose message starts with `NOSCRIPT` when the server lost it. */
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** Runs a script sent in full (the server caches it). */
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** The single-key acquire: `SET key value PX ms NX`; `'OK'` when set, `null` when held. */
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
  pttl(key: string): Promise<number>;
  /** `INFO section`, as the server's text (`field:value` lines). */
  info(section: string): Promise<string>;
  /** Any other command (`PUBSUB NUMSUB`, `CONFIG GET`, `SCAN`, `GET`, `TIME`). */
  call?(command: string, ...args: Array<string | number>): Promise<unknown>;
  /** Closes after the replies of the commands already sent. */
  quit(): Promise<unknown>;
  /** Closes at once. */
  disconnect(): void;
  readonly status?: string;
  /** Where it connects (for labels and the duplicate-server check) and its fail-fast settings. */
  readonly options?: {
    readonly host?: string | undefined;
    readonly port?: number | undefined;
    readonly path?: string | undefined;
    readonly commandTimeout?: number | undefined;
    readonly connectTimeout?: number | undefined;
    readonly enableOfflineQueue?: boolean | undefined;
    readonly maxRetriesPerRequest?: number | null | undefined;
  };
  connect?(): Promise<void>;
  on?(event: string, listener: (...args: unknown[]) => void): unknown;
  once?(event: 'end', listener: () => void): unknown;
  removeListener?(event: string, listener: (...args: unknown[]) => void): unknown;
  /**
   * A new connection to the same server, for release notices: a {@link SubscriberClient}
   * (typed loosely so clients whose own type declares more overloads fit). `lazyConnect` is
   * asked: the caller connects it.
   */
  duplicate?(override?: Record<string, unknown>): object;
  readonly stream?: NodeClientStream;
}

/**
 * A Redis Cluster as one lock node: commands are routed to the master of their first key's
 * slot, and what the engine needs beyond one server's interface. Recognised by
 * `isClusterClient` (its keys are then hash-tagged, multi-key scripts split by slot).
 */
export interface ClusterNodeClient extends NodeClient {
  readonly isClusterClient: true;
  /**
   * `WAIT replicas timeoutMs` on the master serving `key`'s slot, on the connection the grant was
   * written on. Resolves with how many replicas acknowledged every write that connection made.
   */
  replicaAcks(key: string, replicas: number, timeoutMs: number): Promise<number>;
  /** The ids of every server of the cluster (masters and replicas), from `CLUSTER NODES`. */
  memberIds(): Promise<string[]>;
  /**
   * The master serving `key`'s slot in the client's slot map (`host:port`), undefined when not
   * known: grants to one master in one tick are then confirmed by one WAIT.
   */
  masterOf?(key: string): string | undefined;
  /** `SPUBLISH` on the master of `channel`'s slot (a fair lock's hand-over notice, sent by the client: a script cannot publish outside its slot). */
  spublish(channel: string, message: string): Promise<unknown>;
  /** Sharded subscribers of `channel` (`PUBSUB SHARDNUMSUB`) on the master of its slot (inspect: the waiters of a resource). */
  shardSubscribers(channel: string): Promise<number>;
}
