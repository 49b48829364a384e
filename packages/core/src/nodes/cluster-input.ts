/**
 * The cluster entries of `nodes[]`: what they look like, and the check that two clusters
 * (or a cluster and a plain node) given to one Redlock do not share servers.
 */
import type { Cluster, ClusterOptions } from 'ioredis';
import { RedlockArgumentError } from '../errors/errors.js';
import { isNodeRedisCluster, nodeRedisClusterRoots, type NodeRedisClusterLike } from './node-redis-cluster-shape.js';

/**
 * A Redis Cluster the library connects to itself: startup nodes (`redis://host:port` URLs or
 * `{ host, port }`), any of the cluster's servers, and ioredis cluster options (credentials
 * and TLS go in `options.redisOptions`).
 *
 * @example
 * ```ts
 * const redlock = new Redlock([{ cluster: ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000'] }]);
 * ```
 */
export interface ClusterNodeInput {
  readonly cluster: ReadonlyArray<string | { readonly host: string; readonly port: number }>;
  readonly options?: ClusterOptions;
}

/** Whether a `nodes[]` entry is an ioredis `Cluster` (passed in) or cluster options. */
export function isClusterInput(input: unknown): input is Cluster | ClusterNodeInput {
  if (typeof input !== 'object' || input === null) return false;
  if ((input as { isCluster?: unknown }).isCluster === true) return true;
  return 'cluster' in input && !('evalsha' in input);
}

/** Whether a `nodes[]` entry is a whole Redis Cluster: ioredis' (passed in or as options) or node-redis' `createCluster()`. */
export function isClusterEntry(input: unknown): input is Cluster | ClusterNodeInput | NodeRedisClusterLike {
  return isClusterInput(input) || isNodeRedisCluster(input);
}

/** A startup node as `host:port`, for labels and the comparison of clusters. */
export function startupAddress(node: unknown): string | undefined {
  if (typeof node === 'string') {
    try {
      const url = new URL(node);
      return `${url.hostname}:${url.port || 6379}`;
    } catch {
      return undefined;
    }
  }
  if (typeof node === 'object' && node !== null) {
    const { host, port } = node as { host?: unknown; port?: unknown };
    return `${typeof host === 'string' ? host : 'localhost'}:${typeof port === 'number' || typeof port === 'string' ? port : 6379}`;
  }
  if (typeof node === 'number') return `localhost:${node}`;
  return undefined;
}

/** The startup-node addresses of a cluster entry (`host:port`), for the overlap check. */
export function clusterStartupNodes(input: Cluster | ClusterNodeInput | NodeRedisClusterLike): string[] {
  if (isNodeRedisCluster(input)) return nodeRedisClusterRoots(input);
  const given: unknown = 'isCluster' in input ? (input as unknown as { startupNodes: unknown }).startupNodes : input.cluster;
  return Array.isArray(given) ? given.flatMap((s) => startupAddress(s) ?? []) : [];
}

/** A cluster node's label: its first startup node, and how many more were given. */
export function clusterLabel(nodes: readonly string[], index: number): string {
  const first = nodes[0];
  if (!first) return `cluster${index}`;
  return nodes.length > 1 ? `cluster ${first} (+${nodes.length - 1} more)` : `cluster ${first}`;
}

/** Refuses a `{ cluster }` entry without usable startup nodes. */
function checkClusterInput(input: ClusterNodeInput, index: number): void {
  const given: unknown = input.cluster;
  if (!Array.isArray(given) || given.length === 0) {
    throw new RedlockArgumentError(
      `nodes[${index}].cluster must be a non-empty array of startup nodes, e.g. { cluster: ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000'] }.`,
    );
  }
  given.forEach((node, i) => {
    if (startupAddress(node) === undefined) {
      throw new RedlockArgumentError(`nodes[${index}].cluster[${i}] is not a redis:// URL or { host, port }.`);
    }
  });
}

/**
 * Refuses two cluster entries that share a startup node, and a plain node that is one of a
 * cluster's startup nodes: a quorum across them would count one server twice. (Clusters that share
 * servers not given as startup nodes are found by `checkIndependence()`.)
 * @throws {RedlockArgumentError}
 */
export function checkClusterOverlap(nodes: readonly unknown[], plainAddress: (input: unknown) => string | undefined): void {
  const owner = new Map<string, number>();
  nodes.forEach((input, i) => {
    if (isClusterInput(input) && !('isCluster' in input)) checkClusterInput(input, i);
  });
  nodes.forEach((input, i) => {
    const addresses = isClusterEntry(input) ? clusterStartupNodes(input) : [plainAddress(input)].flatMap((a) => a ?? []);
    for (const address of new Set(addresses.map(canonical))) {
      const first = owner.get(address);
      if (first !== undefined && first !== i) {
        throw new RedlockArgumentError(
          `nodes[${first}] and nodes[${i}] share the server ${address}: ${isClusterEntry(input) || isClusterEntry(nodes[first]) ? 'a cluster counts as one node, and ' : ''}` +
            'a quorum would count that server twice. Give each independent cluster or server once.',
        );
      }
      owner.set(address, i);
    }
  });
}

function canonical(address: string): string {
  return address.replace(/^(localhost|127\.0\.0\.1|\[?::1\]?|loopback):/i, 'loopback:');
}
