import { NodeIndependenceError } from '../errors/errors.js';
import { isClusterClient } from '../nodes/cluster-client.js';
import type { LockNode } from '../nodes/lock-node.js';

/** What `checkIndependence()` learned about one node. */
export interface NodeReport {
  /** `host:port` of the node. */
  readonly node: string;
  /** Whether the node answered. */
  readonly reachable: boolean;
  /** `master` or `slave` (Redis' own word for a replica), when reachable. */
  readonly role?: string;
  /** The server's run id: two nodes with the same run id are the same server. */
  readonly runId?: string;
  /** The server's version, when reachable. */
  readonly version?: string;
  /** Why the node could not be asked. */
  readonly error?: string;
  /** A Redis Cluster node: the ids of every server in that cluster (`CLUSTER NODES`). */
  readonly clusterNodeIds?: readonly string[];
}

function field(info: string, name: string): string | undefined {
  const match = new RegExp(`^${name}:(.*)$`, 'm').exec(info);
  return match?.[1]?.trim();
}

async function inspect(node: LockNode, timeoutMs: number): Promise<NodeReport> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await node.connect();
    const info = await Promise.race([
      Promise.all([node.client.info('server'), node.client.info('replication')]).then((parts) => parts.join('\n')),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    const clusterNodeIds = isClusterClient(node.client) ? await node.client.memberIds() : undefined;
    const report: NodeReport = { node: node.label, reachable: true, ...(clusterNodeIds ? { clusterNodeIds } : {}) };
    const role = field(info, 'role');
    const runId = field(info, 'run_id');
    const version = field(info, 'redis_version');
    return {
      ...report,
      ...(role ? { role } : {}),
      ...(runId ? { runId } : {}),
      ...(version ? { version } : {}),
    };
  } catch (err) {
    // The connection's real cause (ECONNREFUSED 127.0.0.1:6390), not ioredis' "Stream isn't writeable…".
    return { node: node.label, reachable: false, error: node.connection.describe(err) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Asks every node for its role and run id. Throws {@link NodeIndependenceError} when
 * a node is a replica or two configured nodes are the same server. An unreachable
 * node is reported, not treated as a configuration error (that is availability).
 */
export async function checkNodeIndependence(nodes: readonly LockNode[], timeoutMs: number): Promise<NodeReport[]> {
  const reports = await Promise.all(nodes.map((node) => inspect(node, timeoutMs)));
  const problems: string[] = [];
  let sameServer = false;
  const seen = new Map<string, string>();
  const members = new Map<string, string>();
  reports.forEach((r, i) => {
    const name = `nodes[${i}] (${r.node})`;
    // Two clusters (or one cluster twice) sharing a server: a quorum would count it twice.
    const shared = r.clusterNodeIds?.find((id) => members.has(id) && members.get(id) !== name);
    if (shared) {
      sameServer = true;
      problems.push(`${members.get(shared)} and ${name} are clusters sharing the server with node id ${shared}`);
    }
    for (const id of r.clusterNodeIds ?? []) if (!members.has(id)) members.set(id, name);
  });
  reports.forEach((r, i) => {
    // Named by position too: the same URL given twice has the same label twice.
    const name = `nodes[${i}] (${r.node})`;
    if (r.role && r.role !== 'master') problems.push(`${name} is a replica (role:${r.role})`);
    if (r.runId) {
      const first = seen.get(r.runId);
      if (first) {
        sameServer = true;
        problems.push(`${first} and ${name} are the same server (same run_id)`);
      } else seen.set(r.runId, name);
    }
  });
  if (problems.length > 0) throw new NodeIndependenceError(problems, { sameServer });
  return reports;
}
