/**
 * A node-redis cluster (`createCluster()` of the `redis` package, v5) as it is passed in: the part
 * of it the adapter uses, how a `nodes[]` entry is recognised as one, and what its options say
 * (its root nodes, its offline queue). Apart from the adapter (node-redis-cluster-client.ts): the
 * input checks and the single-server adapter only need to recognise a cluster, not to run one.
 */

/** A listener of node-redis' pub/sub: message first, then channel. */
type NodeRedisListener = (message: string, channel: string) => unknown;

/** A root node of a node-redis cluster (`createCluster({ rootNodes })`). */
interface NodeRedisRootNode {
  readonly url?: string;
  readonly socket?: { readonly host?: string; readonly port?: number };
}

/** The part of a node-redis cluster (`createCluster()`) the adapter uses. */
export interface NodeRedisClusterLike {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): void;
  duplicate(overrides?: { minimizeConnections?: boolean }): NodeRedisClusterLike;
  sSubscribe(channels: string | string[], listener: NodeRedisListener): Promise<unknown>;
  sUnsubscribe(channels: string | string[], listener?: NodeRedisListener): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  readonly masters: ReadonlyArray<{ readonly client?: { readonly isReady?: boolean } | undefined }>;
  /** The shard of each slot, once discovered. */
  readonly slots: ReadonlyArray<{ readonly master?: { readonly address?: string } } | undefined>;
  readonly _options: {
    readonly rootNodes: readonly NodeRedisRootNode[];
    readonly defaults?: { readonly disableOfflineQueue?: boolean };
  };
}

/** The slot map refresh node-redis runs on MOVED (not part of its typed surface everywhere: optional). */
export interface Rediscovery {
  readonly _slots?: { rediscover?(startWith: unknown): Promise<unknown> };
}

/** Whether `value` has the marks of a node-redis cluster (`sendCommand` plus its shard map), complete or not. */
export function looksLikeNodeRedisCluster(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.sendCommand === 'function' && ('masters' in v || typeof v.getSlotRandomNode === 'function');
}

/** Whether `value` is a node-redis cluster (`createCluster()`) with every member the adapter uses. */
export function isNodeRedisCluster(value: unknown): value is NodeRedisClusterLike {
  if (!looksLikeNodeRedisCluster(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    ['connect', 'close', 'destroy', 'duplicate', 'sSubscribe', 'sUnsubscribe', 'on'].every((m) => typeof v[m] === 'function') &&
    'isOpen' in v &&
    Array.isArray((v._options as { rootNodes?: unknown } | undefined)?.rootNodes)
  );
}

/** The root nodes of a node-redis cluster as `host:port`, for labels and the overlap check. */
export function nodeRedisClusterRoots(cluster: NodeRedisClusterLike): string[] {
  return cluster._options.rootNodes.flatMap((node) => {
    if (node.socket?.host !== undefined || node.socket?.port !== undefined) {
      return [`${node.socket.host ?? 'localhost'}:${node.socket.port ?? 6379}`];
    }
    if (!node.url) return [];
    try {
      const url = new URL(node.url);
      return [`${url.hostname || 'localhost'}:${url.port || 6379}`];
    } catch {
      return [];
    }
  });
}

/** The warning for a cluster passed in whose commands to a dead master may queue instead of failing. */
export function nodeRedisClusterWarning(cluster: NodeRedisClusterLike, label: string): string | undefined {
  if (cluster._options.defaults?.disableOfflineQueue === true) return undefined;
  return (
    `the node-redis cluster for ${label} has its offline queue enabled: commands to a dead master may queue instead of failing fast. ` +
    'The lock stays correct (per-node timeouts still apply), but consider createCluster({ defaults: { disableOfflineQueue: true } }).'
  );
}
