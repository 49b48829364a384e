import type { EngineMemberHealth } from '@redlock-nest/core/operator';
import type { EtcdTransport } from './http-transport.js';
import { probeMembers } from './member-health.js';

/** What an etcd finding is about. */
export type EtcdFindingCheck = 'reachable' | 'members' | 'version' | 'leader' | 'listed';

/** One fact about one member (`node`) or about the whole cluster (`node: 'cluster'`). */
export interface EtcdFinding {
  readonly node: string;
  readonly check: EtcdFindingCheck;
  /** `error`: locks fail on this member; `warn`: a guarantee is weaker (fault tolerance, an upgrade half done). */
  readonly level: 'ok' | 'warn' | 'error';
  readonly message: string;
  readonly fix?: string;
}

/**
 * What `EtcdOperator.check()` found.
 *
 * @example
 * ```ts
 * const report = await operator.check();
 * if (!report.ok) console.error(report.findings.filter((f) => f.level === 'error'));
 * ```
 */
export interface EtcdClusterCheck {
  /** No finding is an `error`. */
  readonly ok: boolean;
  /** Members the cluster has (its member list), which may differ from the hosts given. */
  readonly size: number;
  /** Members a lock needs: a majority of `size`. */
  readonly quorum: number;
  readonly leader?: string;
  readonly members: readonly EngineMemberHealth[];
  readonly findings: readonly EtcdFinding[];
}

interface MemberList {
  readonly members?: ReadonlyArray<{ readonly name?: string; readonly clientURLs?: readonly string[] }>;
}

/** Findings about the cluster's size: fewer than 3 members tolerate no failure, an even count no more than one fewer. */
function sizeFinding(size: number): EtcdFinding {
  const tolerates = Math.floor((size - 1) / 2);
  if (size < 3) {
    return {
      node: 'cluster',
      check: 'members',
      level: 'warn',
      message: `${size} member(s): no fault tolerance, one member down stops every lock`,
      fix: 'run 3 or 5 members (etcdctl member add)',
    };
  }
  if (size % 2 === 0) {
    return {
      node: 'cluster',
      check: 'members',
      level: 'warn',
      message: `${size} members tolerate ${tolerates} failure(s), as ${size - 1} would, with a larger majority to reach`,
      fix: `run an odd number of members (${size - 1} or ${size + 1})`,
    };
  }
  return { node: 'cluster', check: 'members', level: 'ok', message: `${size} members: tolerates ${tolerates} failure(s)` };
}

/**
 * Checks the cluster the way a lock depends on it: every listed member answers and sees a
 * leader, they agree on it, the cluster has at least 3 members (an odd number), every member is
 * listed (the client fails over only to listed ones), and all run one version (a rolling upgrade
 * left half done). Never reports credentials.
 */
export async function checkCluster(t: EtcdTransport, timeoutMs: number): Promise<EtcdClusterCheck> {
  const health = await probeMembers(t, timeoutMs);
  const findings: EtcdFinding[] = health.nodes.map((m) =>
    m.status === 'up'
      ? { node: m.node, check: 'reachable', level: 'ok', message: `${m.role}, etcd ${m.version}, raft index ${m.raftIndex}` }
      : {
          node: m.node,
          check: 'reachable',
          level: 'error',
          message: m.error === 'no leader' ? 'answers but sees no leader: it cannot serve a lock' : `unreachable: ${m.error}`,
          fix: m.error === 'no leader' ? 'bring a majority of the members back' : 'start the member, or check the address and port',
        },
  );
  let size = health.nodes.length;
  try {
    const list = await t.call<MemberList>('/v3/cluster/member/list', {}, performance.now() + timeoutMs);
    const members = list.members ?? [];
    size = members.length;
    const listed = new Set(t.labels);
    for (const m of members) {
      const urls = (m.clientURLs ?? []).map((u) => new URL(u).host);
      if (urls.length > 0 && !urls.some((u) => listed.has(u))) {
        findings.push({
          node: urls[0]!,
          check: 'listed',
          level: 'warn',
          message: `member ${m.name ?? '?'} is not in the hosts given: the client cannot fail over to it`,
          fix: `add ${urls[0]} to the hosts (every member's client URL)`,
        });
      }
    }
  } catch (err) {
    findings.push({
      node: 'cluster',
      check: 'members',
      level: 'error',
      message: `no member listed the cluster's members: ${err instanceof Error ? err.message : String(err)}`,
    });
  }
  findings.push(sizeFinding(size));
  const versions = new Map<string, string[]>();
  for (const m of health.nodes) if (m.version) versions.set(m.version, [...(versions.get(m.version) ?? []), m.node]);
  if (versions.size > 1) {
    findings.push({
      node: 'cluster',
      check: 'version',
      level: 'warn',
      message: `members run different versions: ${[...versions].map(([v, nodes]) => `${v} on ${nodes.join(', ')}`).join('; ')}`,
      fix: 'finish the rolling upgrade: one version on every member',
    });
  } else if (versions.size === 1) {
    findings.push({ node: 'cluster', check: 'version', level: 'ok', message: `every member runs etcd ${[...versions.keys()][0]}` });
  }
  const leaders = new Set(health.nodes.filter((m) => m.role === 'leader').map((m) => m.node));
  if (leaders.size > 1) {
    findings.push({
      node: 'cluster',
      check: 'leader',
      level: 'warn',
      message: `${leaders.size} members say they lead (${[...leaders].join(', ')}): an election is under way or one is cut off`,
      fix: 'run the check again; if it stays, look for a partition between the members',
    });
  }
  return {
    ok: !findings.some((f) => f.level === 'error'),
    size,
    quorum: Math.floor(size / 2) + 1,
    ...(health.leader === undefined ? {} : { leader: health.leader }),
    members: health.nodes,
    findings,
  };
}
