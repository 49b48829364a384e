import type { Redlock } from '@redlock-nest/core';
import type { EngineMemberHealth } from '@redlock-nest/core/operator';

/**
 * One lock server as the health indicator saw it (a Redis node, or an engine's member such as an
 * etcd member, which also reports `raftIndex` and `version`). Carries the label only, never credentials.
 */
export type NodeHealth = EngineMemberHealth;

type LockNodeLike = Redlock['nodes'][number];

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/** The node's real cause (`ECONNREFUSED 127.0.0.1:6390`, `ENOTFOUND redis-a`), not ioredis' internals; one short line. */
function describe(node: LockNodeLike, err: unknown): string {
  const text = node.connection.describe(err).split('\n', 1)[0]!;
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/**
 * Asks one node for its replication role and measures the round trip. Never rejects: a node
 * that fails, or does not answer within `timeoutMs` (connecting included), is `down`.
 */
export async function probeNode(node: LockNodeLike, timeoutMs: number): Promise<NodeHealth> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    // Connecting is not latency: a lazily connected client pays it once.
    await Promise.race([node.connect(), deadline]);
    const start = performance.now();
    const info = await Promise.race([node.client.info('replication'), deadline]);
    const latencyMs = Math.round((performance.now() - start) * 100) / 100;
    const role = field(info, 'role');
    return { node: node.label, status: 'up', latencyMs, ...(role ? { role } : {}) };
  } catch (err) {
    return { node: node.label, status: 'down', error: describe(node, err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a node can take part in a lock quorum: it answered and is not a replica. */
export function canLock(health: NodeHealth): boolean {
  return health.status === 'up' && health.role !== 'slave' && health.role !== 'replica';
}
