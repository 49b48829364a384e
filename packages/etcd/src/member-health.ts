import type { EngineHealth, EngineMemberHealth } from '@redlock-nest/core/operator';
import type { EtcdTransport } from './http-transport.js';

/** The part of etcd's `Maintenance.Status` reply a health check reads. */
interface StatusReply {
  readonly header?: { readonly member_id?: string };
  readonly leader?: string;
  readonly raftIndex?: string;
  readonly version?: string;
}

/**
 * Asks every configured member for its status (`/v3/maintenance/status`): whether it answers,
 * whether it sees a leader, which member that is, its raft index and version. A member that fails
 * or does not answer within `timeoutMs` is `down`; one without a leader is `down` too (it cannot
 * serve a lock). Never rejects.
 */
export async function probeMembers(transport: EtcdTransport, timeoutMs: number): Promise<EngineHealth> {
  const labels = transport.labels;
  const statuses = await Promise.all(
    labels.map(async (node, i): Promise<{ health: EngineMemberHealth; leader?: string }> => {
      const start = performance.now();
      try {
        const status = await transport.probe<StatusReply>(i, '/v3/maintenance/status', {}, timeoutMs);
        const latencyMs = Math.round((performance.now() - start) * 100) / 100;
        const leader = status.leader && status.leader !== '0' ? status.leader : undefined;
        const base = {
          node,
          latencyMs,
          ...(status.raftIndex ? { raftIndex: status.raftIndex } : {}),
          ...(status.version ? { version: status.version } : {}),
        };
        if (!leader) return { health: { ...base, status: 'down', error: 'no leader' } };
        const role = leader === status.header?.member_id ? 'leader' : 'follower';
        return { health: { ...base, status: 'up', role }, leader };
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        return { health: { node, status: 'down', error: text.length > 120 ? `${text.slice(0, 120)}…` : text } };
      }
    }),
  );
  const nodes = statuses.map((s) => s.health);
  const leaders = new Set(statuses.map((s) => s.leader).filter((l): l is string => l !== undefined));
  const leaderLabel = nodes.find((n) => n.role === 'leader')?.node ?? (leaders.size === 1 ? [...leaders][0] : undefined);
  return {
    quorum: Math.floor(labels.length / 2) + 1,
    reachable: nodes.filter((n) => n.status === 'up').length,
    ...(leaderLabel === undefined ? {} : { leader: leaderLabel }),
    nodes,
  };
}
