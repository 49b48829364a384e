/**
 * `redlock.checkNodes()`: the facts Redlock's safety rests on that no lock operation
 * checks (the Redis distributed-locks page, "Redlock"; Martin Kleppmann's "How to do
 * distributed locking" shows what breaks without them), each reported as ok, warn or
 * error with a one-line fix. Never reports credentials or owner tokens.
 */
import { RedlockError } from '../errors/errors.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import { probeNode, type NodeFacts } from './node-probe.js';
import { infoField } from '../nodes/node-commands.js';

/** How bad a finding is: `error` can break mutual exclusion or the library; `warn` weakens a guarantee. */
export type FindingLevel = 'ok' | 'warn' | 'error';

/** What a finding is about. */
export type FindingCheck = 'reachable' | 'role' | 'duplicate' | 'latency' | 'clock' | 'persistence' | 'eviction' | 'acl' | 'restart';

/** The `node` of a finding about the whole set rather than one node (the CLI's restart-rule warning). */
export const ALL_NODES = 'all nodes';

/** One fact about one node. */
export interface NodeFinding {
  /** `host:port` of the node (never credentials), or {@link ALL_NODES}. */
  readonly node: string;
  readonly check: FindingCheck;
  readonly level: FindingLevel;
  /** What was found, in one line. */
  readonly message: string;
  /** The fix, in one line (absent for `ok`). */
  readonly fix?: string;
}

/** Everything `checkNodes()` found. */
export interface NodeCheckReport {
  /** No finding is an `error`. */
  readonly ok: boolean;
  readonly findings: readonly NodeFinding[];
}

/** Options of `checkNodes()`. */
export interface CheckNodesOptions {
  /** Interval between the two TIME samples of the clock-rate check (longer: less noise). Default 500 ms. */
  readonly clockSampleMs?: number;
  /** Called as each node's probe finishes (the CLI's progress line). */
  readonly onNodeDone?: (node: string, done: number, total: number) => void;
}

/** What the check needs of its Redlock. */
export interface NodeCheckContext {
  readonly nodes: readonly LockNode[];
  /** The Redlock's key names: the probe's throw-away keys are named (and hash-tagged) as a resource's. */
  readonly keyNames: KeyNames;
  readonly nodeTimeoutMs: number;
  readonly driftFactor: number;
}

/** A node check found errors, and the caller asked to fail on them (the Nest module's `nodeCheck: 'fail'`). */
export class NodeCheckError extends RedlockError {
  readonly findings: readonly NodeFinding[];

  constructor(findings: readonly NodeFinding[]) {
    const errors = findings.filter((f) => f.level === 'error');
    super(`Redlock node check failed: ${errors.map((f) => `${f.node} ${f.check}: ${f.message} (fix: ${f.fix ?? '-'})`).join('; ')}`);
    this.findings = findings;
  }
}

type Finding = Omit<NodeFinding, 'node'>;

function ok(check: FindingCheck, message: string): Finding {
  return { check, level: 'ok', message };
}

function role(info: string): Finding {
  const r = infoField(info, 'role');
  if (r === 'master') return ok('role', 'master');
  return {
    check: 'role',
    level: 'error',
    message: `a replica (role:${r ?? 'unknown'}): a failover can hand its copy of a lock to a second holder`,
    fix: 'configure independent masters only (REPLICAOF NO ONE, or point at the master)',
  };
}

function latency(ms: number, timeoutMs: number): Finding {
  const text = `round trip ${ms.toFixed(2)} ms (node timeout ${timeoutMs} ms)`;
  if (ms >= timeoutMs)
    return { check: 'latency', level: 'error', message: text, fix: 'raise nodeTimeoutMs above the round trip, or move the node closer' };
  if (ms >= timeoutMs / 2)
    return { check: 'latency', level: 'warn', message: text, fix: 'raise nodeTimeoutMs: half of it is spent on the round trip' };
  return ok('latency', text);
}

function clock(rate: number, uncertainty: number, driftFactor: number): Finding {
  const skew = rate - 1;
  // Only the part of the skew the sampling noise cannot explain counts.
  const beyond = Math.abs(skew) - uncertainty;
  const text = `clock rate ${rate.toFixed(6)}× the local monotonic clock (${(skew * 1e6).toFixed(0)} ppm, ±${(uncertainty * 1e6).toFixed(0)} ppm)`;
  if (beyond > driftFactor) {
    return {
      check: 'clock',
      level: 'error',
      message: `${text}, beyond driftFactor ${driftFactor}`,
      fix: "fix the node's time sync (chrony/ntpd slewing, not stepping) or raise driftFactor",
    };
  }
  if (beyond > driftFactor / 2) {
    return {
      check: 'clock',
      level: 'warn',
      message: `${text}, over half of driftFactor ${driftFactor}`,
      fix: "check the node's time sync; locks keep only half their drift allowance",
    };
  }
  return ok('clock', text);
}

function persistence(facts: NodeFacts, info: string): Finding {
  const aof = infoField(info, 'aof_enabled') === '1';
  const fsync = facts.appendfsync;
  if (aof && fsync === 'always') return ok('persistence', 'AOF with appendfsync always: keeps its locks across a restart');
  const restartRule = 'after a restart the client keeps it out of quorums for the largest TTL in use (the restart rule)';
  if (aof && fsync === undefined) {
    return {
      check: 'persistence',
      level: 'warn',
      message: `AOF on, appendfsync unknown (CONFIG not allowed); ${restartRule}`,
      fix: 'set appendfsync always, or allow CONFIG GET to prove it',
    };
  }
  if (aof) {
    return {
      check: 'persistence',
      level: 'warn',
      message: `AOF with appendfsync ${fsync}: a crash loses recent locks; ${restartRule}`,
      fix: 'CONFIG SET appendfsync always (and persist it in redis.conf)',
    };
  }
  const rdb = facts.save !== undefined && facts.save.trim() !== '';
  return {
    check: 'persistence',
    level: 'warn',
    message: `${rdb ? `RDB snapshots only (save "${facts.save}")` : 'no persistence'}: a restart loses its locks; ${restartRule}`,
    fix: 'CONFIG SET appendonly yes and appendfsync always, or accept a TTL-long outage of the node after each restart',
  };
}

function eviction(info: string): Finding {
  const policy = infoField(info, 'maxmemory_policy') ?? 'unknown';
  const maxmemory = Number(infoField(info, 'maxmemory') ?? 0);
  if (policy === 'noeviction') return ok('eviction', 'maxmemory-policy noeviction');
  const fix = 'CONFIG SET maxmemory-policy noeviction (lock keys carry a TTL, so volatile-* policies evict them too)';
  if (maxmemory > 0) {
    return {
      check: 'eviction',
      level: 'error',
      message: `maxmemory-policy ${policy} with maxmemory ${maxmemory}: memory pressure can evict a held lock`,
      fix,
    };
  }
  return {
    check: 'eviction',
    level: 'warn',
    message: `maxmemory-policy ${policy} (no maxmemory yet): setting maxmemory would let it evict held locks`,
    fix,
  };
}

function acl(facts: NodeFacts): Finding {
  if (facts.denied && facts.denied.length > 0) {
    return {
      check: 'acl',
      level: 'error',
      message: `the connected user may not run: ${facts.denied.join(', ')}`,
      fix: 'grant the least-privilege ACL of docs/security.md (keys, channels and commands)',
    };
  }
  if (facts.aclUnknown)
    return {
      check: 'acl',
      level: 'warn',
      message: facts.aclUnknown,
      fix: 'allow ACL WHOAMI and ACL DRYRUN to the checking user, or check docs/security.md by hand',
    };
  return ok('acl', 'the connected user may run every command the library sends');
}

/** Findings of one node that need no other node. */
function nodeFindings(facts: NodeFacts, ctx: NodeCheckContext): Finding[] {
  if (facts.error !== undefined || facts.info === undefined) {
    return [
      {
        check: 'reachable',
        level: 'error',
        message: `not reachable: ${facts.error ?? 'no INFO'}`,
        fix: 'start the node or fix its address; a majority must be up for any lock',
      },
    ];
  }
  return [
    ok('reachable', `Redis ${infoField(facts.info, 'redis_version') ?? '?'}`),
    role(facts.info),
    latency(facts.latencyMs!, ctx.nodeTimeoutMs),
    facts.clockRate === undefined
      ? {
          check: 'clock',
          level: 'warn',
          message: `clock rate not measured: ${facts.clockError ?? 'no TIME reply'}`,
          fix: 'allow TIME to the checking user (+time)',
        }
      : clock(facts.clockRate, facts.clockRateUncertainty!, ctx.driftFactor),
    persistence(facts, facts.info),
    eviction(facts.info),
    acl(facts),
  ];
}

/**
 * Probes every node in parallel and reports, per node: reachability, role, duplicate
 * servers, latency, clock rate skew, persistence, eviction policy and ACL permissions.
 */
export async function checkNodes(ctx: NodeCheckContext, options: CheckNodesOptions = {}): Promise<NodeCheckReport> {
  const clockSampleMs = options.clockSampleMs ?? 500;
  let done = 0;
  const facts = await Promise.all(
    ctx.nodes.map((node) =>
      probeNode(node, ctx.keyNames, ctx.nodeTimeoutMs * 4, clockSampleMs).then((f) => {
        options.onNodeDone?.(node.label, ++done, ctx.nodes.length);
        return f;
      }),
    ),
  );
  const findings: NodeFinding[] = [];
  const seen = new Map<string, string>();
  facts.forEach((f, i) => {
    const name = `nodes[${i}] (${f.node})`;
    for (const finding of nodeFindings(f, ctx)) findings.push({ node: f.node, ...finding });
    const runId = f.info ? infoField(f.info, 'run_id') : undefined;
    if (!runId) return;
    const first = seen.get(runId);
    if (first) {
      findings.push({
        node: f.node,
        check: 'duplicate',
        level: 'error',
        message: `${name} is the same server as ${first} (same run_id): one failure takes out two votes`,
        fix: 'list each independent server once',
      });
    } else {
      seen.set(runId, name);
      findings.push({ node: f.node, check: 'duplicate', level: 'ok', message: 'a distinct server' });
    }
  });
  return { ok: !findings.some((f) => f.level === 'error'), findings };
}
