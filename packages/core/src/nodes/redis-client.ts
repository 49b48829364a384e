import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { RedlockArgumentError } from '../errors/errors.js';
import { checkNodeOptions } from './node-input.js';
import type { NodeClient } from './node-client.js';
import { isNodeRedisClient, NodeRedisAdapter, type NodeRedisClientLike } from './node-redis-client.js';
import type { ClusterNodeInput } from './cluster-input.js';
import type { NodeRedisClusterLike } from './node-redis-cluster-shape.js';

/**
 * The client interface the engine uses (see node-client.ts): ioredis' shape. Kept under this
 * name for code written against earlier versions.
 */
export type RedisClientLike = NodeClient;

/**
 * One configured node: a `redis://` / `rediss://` URL, ioredis options, or a client (ioredis,
 * node-redis `createClient()`, or an in-memory node's client); or a whole Redis Cluster (an
 * ioredis `Cluster` or a node-redis `createCluster()` you pass in, or `{ cluster: [...] }` for
 * one the library creates).
 */
export type RedisNodeInput =
  RedisClientLike | NodeRedisClientLike | NodeRedisClusterLike | string | RedisOptions | ClusterNodeInput | Cluster;

/**
 * The client-side connect timeout of a node, and how long closing it may wait for it: twice
 * `nodeTimeoutMs`, at least 1 s.
 */
export function backstopTimeoutMs(nodeTimeoutMs: number): number {
  return Math.max(1_000, nodeTimeoutMs * 2);
}

/**
 * The command backstop of the clients this library creates: it frees the commands of a node
 * that stopped answering (see LockNode), and never judges a node. Each lock round times its
 * nodes itself, from when the command was written and only after reading what already
 * arrived. ioredis' own command timeout, this backstop's first form, fired in the timers phase,
 * before the poll phase read the replies: when this process stalled past it (a long GC pause, a
 * starved CPU), it failed commands whose replies sat unread in the socket and reported a busy
 * machine as an outage of every node (at 1 s, a stall of 1.5 s failed every call of a burst with
 * QuorumUnavailableError). So it is far above any stall we expect: 20 × nodeTimeoutMs, at least 10 s.
 */
export function commandBackstopMs(nodeTimeoutMs: number): number {
  return Math.max(10_000, nodeTimeoutMs * 20);
}

/**
 * Options every client this library creates gets, so a dead node fails fast: no offline
 * queue, no retried commands, a short connect timeout, and a late command-timeout backstop
 * (the lock rounds time the nodes themselves, see commandBackstopMs).
 *
 * @example
 * ```ts
 * const client = new Redis(url, failFastOptions(500)); // to pass in a client of your own
 * ```
 */
export function failFastOptions(nodeTimeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandBackstopMs(nodeTimeoutMs),
    connectTimeout: backstopTimeoutMs(nodeTimeoutMs),
    // Off: LockNode batches each tick's writes itself (see corkForTick), without the delay.
    enableAutoPipelining: false,
    // ioredis arms this timer even for a socket that already failed (a dead node) and
    // would keep the process alive for its default 2 s after close().
    disconnectTimeout: 100,
    // Reconnect quickly but not in a tight loop; every attempt is cheap when the node is down.
    retryStrategy: (times: number) => Math.min(50 * times, 1_000),
  };
}

function isClient(value: object): value is RedisClientLike {
  // ioredis and the in-memory node; a node-redis client has `evalSha`, not `evalsha`.
  return typeof (value as RedisClientLike).evalsha === 'function';
}

/** Label of a node for messages: `host:port`, never credentials. */
export function labelOf(client: RedisClientLike, index: number): string {
  const o = client.options;
  if (o?.path) return o.path;
  if (o?.host !== undefined || o?.port !== undefined) return `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
  return `node${index}`;
}

function checkUrl(url: string, index: number): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedlockArgumentError(`nodes[${index}] is not a valid URL. Use redis://[user:password@]host:port[/db] or rediss:// for TLS.`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new RedlockArgumentError(`nodes[${index}] has protocol "${parsed.protocol}"; use redis:// or rediss:// (TLS).`);
  }
  if (!parsed.hostname) throw new RedlockArgumentError(`nodes[${index}] has no host. Use redis://host:port.`);
}

/** The warning for a client passed in whose options make a dead node slow to detect. */
function slowFailoverWarning(client: RedisClientLike, label: string): string | undefined {
  const o = client.options;
  if (!o) return undefined;
  const problems: string[] = [];
  if (o.enableOfflineQueue !== false) problems.push('enableOfflineQueue is not false');
  if (o.commandTimeout === undefined) problems.push('no commandTimeout');
  if (o.maxRetriesPerRequest !== 0 && o.maxRetriesPerRequest !== null) problems.push('maxRetriesPerRequest is not 0');
  if (problems.length === 0) return undefined;
  return (
    `the client for ${label} has ${problems.join(', ')}: commands to a dead node may queue instead of failing fast. ` +
    'The lock stays correct (per-node timeouts still apply), but consider enableOfflineQueue: false, ' +
    'maxRetriesPerRequest: 0 and a short commandTimeout.'
  );
}

/** A client plus whether this library created it (and so must close it). */
export interface ClientHandle {
  readonly client: RedisClientLike;
  readonly owned: boolean;
  readonly label: string;
  /**
   * A client created without ioredis' per-command timeout: its node's own backstop, after which
   * a node that left a command unanswered is reconnected (see LockNode and ownClientOptions).
   */
  readonly backstopMs?: number;
  /**
   * A client whose TCP (and TLS) connect its node's backstop times, instead of ioredis' connect
   * timeout, which is only a late backstop on it (see ownClientOptions): how long a connect may
   * take before it is dropped as timed out, judged after a poll phase.
   */
  readonly connectLimitMs?: number;
}

/**
 * The options of a client created from a URL: {@link failFastOptions} without ioredis' command
 * timeout. ioredis arms (and clears) one timer per command when it has one: 10 timers per
 * acquire + release on 5 nodes, about 7% of the uncontended path's CPU (bench:profile). The node
 * keeps the same backstop with one timer for all its commands (LockNode's backstop).
 *
 * ioredis' connect timeout goes the same way, and for the same reason as its command timeout did
 * (see commandBackstopMs): it fires in the timers phase, before the poll phase reads a connect that
 * completed while this process stalled, so a cold process that stalled past it (a long GC pause,
 * a starved CPU, a slow start) failed the connects of every node although each had answered. The
 * node's backstop times the connect instead, at the same short limit ({@link ClientHandle.connectLimitMs}),
 * judged after a poll phase; ioredis' own timer stays as a late backstop. Not with Sentinel:
 * ioredis resolves the master there through sentinel connections of its own, each timed by its
 * connect timeout, which stays short so that an unreachable sentinel is skipped fast.
 */
function ownClientOptions(nodeTimeoutMs: number, sentinels: boolean): RedisOptions {
  const { commandTimeout: _backstop, ...options } = failFastOptions(nodeTimeoutMs);
  return sentinels ? options : { ...options, connectTimeout: commandBackstopMs(nodeTimeoutMs) };
}

/** The handle of a client this library created (see ownClientOptions). */
function ownHandle(client: RedisClientLike, index: number, nodeTimeoutMs: number, sentinels: boolean): ClientHandle {
  const handle = { client, owned: true, label: labelOf(client, index), backstopMs: commandBackstopMs(nodeTimeoutMs) };
  return sentinels ? handle : { ...handle, connectLimitMs: backstopTimeoutMs(nodeTimeoutMs) };
}

/** Turns one `nodes[]` entry into a client, creating and configuring it when needed. */
export function toClient(input: RedisNodeInput, index: number, nodeTimeoutMs: number, warn: (message: string) => void): ClientHandle {
  if (typeof input === 'string') {
    checkUrl(input, index);
    const client = new Redis(input, ownClientOptions(nodeTimeoutMs, false)) as unknown as RedisClientLike;
    return ownHandle(client, index, nodeTimeoutMs, false);
  }
  const given: unknown = input; // JavaScript callers can pass anything
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new RedlockArgumentError(
      `nodes[${index}] must be a redis:// URL, ioredis options, an ioredis client or a node-redis client, got ${
        given === null ? 'null' : Array.isArray(given) ? 'an array' : typeof given
      }.`,
    );
  }
  if (isNodeRedisClient(input)) {
    const client = new NodeRedisAdapter(input);
    const label = labelOf(client, index);
    if (client.options.enableOfflineQueue) {
      warn(
        `the node-redis client for ${label} has its offline queue enabled: commands to a dead node may queue instead of failing fast. ` +
          'The lock stays correct (per-node timeouts still apply), but consider createClient({ disableOfflineQueue: true }).',
      );
    }
    return { client, owned: false, label };
  }
  if (isClient(input)) {
    const label = labelOf(input, index);
    const warning = slowFailoverWarning(input, label);
    if (warning) warn(warning);
    return { client: input, owned: false, label };
  }
  checkNodeOptions(input, index);
  // A commandTimeout of the user's own sets the node's backstop as nodeTimeoutMs would (see commandBackstopMs).
  const { commandTimeout, ...options } = input as RedisOptions;
  const sentinels = options.sentinels !== undefined;
  const client = new Redis({ ...options, ...ownClientOptions(commandTimeout ?? nodeTimeoutMs, sentinels) }) as unknown as RedisClientLike;
  return ownHandle(client, index, commandTimeout ?? nodeTimeoutMs, sentinels);
}

/** ioredis statuses in which the client has a socket that will emit 'close' (and then 'end'). */
const SOCKET_OPEN = new Set(['connecting', 'connect', 'ready', 'monitoring']);

interface Closable {
  readonly status?: string;
  quit(): Promise<unknown>;
  disconnect(): void;
  once?(event: 'end', listener: () => void): unknown;
  removeListener?(event: 'end', listener: () => void): unknown;
}

/**
 * Closes a connection this library created and resolves once ioredis reports it ended.
 * QUIT's reply arrives before the socket is gone, and a disconnect arms ioredis' own
 * destroy timer: waiting for 'end' means that when our close() resolves, nothing of the
 * connection (socket or timer) is left on the event loop. Bounded by `boundMs`: by then
 * ioredis' disconnectTimeout has destroyed the socket anyway.
 */
export async function endConnection(client: Closable, quit: boolean, boundMs: number): Promise<void> {
  // Only an open socket ends with an 'end' event. Between reconnects (or before the first
  // connect) disconnect() just cancels the retry timer and nothing is left to wait for.
  const socketOpen = client.status === undefined || SOCKET_OPEN.has(client.status);
  let onEnd: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const ended =
    socketOpen && typeof client.once === 'function'
      ? new Promise<void>((resolve) => {
          onEnd = resolve;
          client.once!('end', resolve);
          timer = setTimeout(resolve, boundMs);
        })
      : Promise.resolve();
  try {
    if (quit) {
      // A node that cannot QUIT (or not before `ended`'s bound: a paused one answers nothing until
      // its command timeout, a late backstop) is disconnected instead.
      const answered = await Promise.race([
        client.quit().then(
          () => true,
          () => false,
        ),
        ended.then(() => client.status === 'end'),
      ]);
      if (!answered) client.disconnect();
    } else {
      client.disconnect();
    }
    if (client.status !== 'end') await ended;
  } finally {
    clearTimeout(timer);
    if (onEnd) client.removeListener?.('end', onEnd);
  }
}
