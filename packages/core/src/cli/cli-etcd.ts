/**
 * `redlock-nest <command> --etcd <url[,url…]>` (or `REDLOCK_ETCD`): the operators' commands on
 * locks held by `@redlock-nest/etcd`. That package depends on this one, so it is loaded at run
 * time, by name, only when `--etcd` is given; the shapes it answers with are restated here.
 */
import { toJson } from './cli-output.js';

interface QueueEntry {
  readonly owner: string;
  readonly mode: string;
  readonly token: bigint;
  readonly ttlMs?: number;
  readonly holds: boolean | undefined;
}

interface Inspection {
  readonly resource: string;
  readonly lock: readonly QueueEntry[];
  readonly semaphore: readonly QueueEntry[];
  readonly holder?: string;
  readonly revision: bigint;
}

interface ForceRelease {
  readonly resource: string;
  readonly released: number;
  readonly owners: readonly string[];
  readonly alsoReleased: readonly string[];
  readonly revokedToken?: bigint;
}

interface Finding {
  readonly node: string;
  readonly check: string;
  readonly level: 'ok' | 'warn' | 'error';
  readonly message: string;
  readonly fix?: string;
}

interface ClusterCheck {
  readonly ok: boolean;
  readonly size: number;
  readonly quorum: number;
  readonly leader?: string;
  readonly findings: readonly Finding[];
}

/** What the CLI uses of `@redlock-nest/etcd`'s `EtcdOperator`. */
interface EtcdOperatorLike {
  inspect(resource: string): Promise<Inspection>;
  forceRelease(resource: string, options: { reason: string }): Promise<ForceRelease>;
  check(): Promise<ClusterCheck>;
  close(): Promise<void>;
}

/** What the etcd commands are given. */
export interface EtcdCommand {
  readonly command: string;
  readonly resource: string | undefined;
  readonly hosts: readonly string[];
  readonly keyPrefix: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly json: boolean;
  readonly force: boolean;
  readonly reason: string | undefined;
  readonly print: (text: string) => void;
  /** A usage error (exit code 2), thrown by the caller's kind. */
  readonly usage: (message: string) => Error;
}

/** Loads `@redlock-nest/etcd` beside this package; a missing one is an error naming the install. */
async function operatorFor(c: EtcdCommand): Promise<EtcdOperatorLike> {
  // A variable, not a literal: the core neither builds against nor bundles the etcd package.
  const specifier = '@redlock-nest/etcd';
  let etcd: { EtcdOperator: new (options: object) => EtcdOperatorLike };
  try {
    etcd = (await import(specifier)) as typeof etcd;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new Error('--etcd needs @redlock-nest/etcd installed beside @redlock-nest/core: npm i @redlock-nest/etcd', { cause: err });
    }
    throw err;
  }
  return new etcd.EtcdOperator({
    hosts: c.hosts,
    ...(c.keyPrefix === undefined ? {} : { keyPrefix: c.keyPrefix }),
    ...(c.timeoutMs === undefined ? {} : { requestTimeoutMs: c.timeoutMs }),
    onWarning: (m: string) => void process.stderr.write(`warning: ${m}\n`),
  });
}

const LEVEL = { ok: 'ok   ', warn: 'WARN ', error: 'ERROR' } as const;

function formatCheck(report: ClusterCheck): string {
  const lines = [`redlock-nest check --etcd: ${report.size} member(s), quorum ${report.quorum}, leader ${report.leader ?? 'none'}`];
  for (const node of [...new Set(report.findings.map((f) => f.node))]) {
    lines.push(node);
    for (const f of report.findings.filter((x) => x.node === node)) {
      lines.push(`  ${LEVEL[f.level]}  ${f.check.padEnd(9)}  ${f.message}`);
      if (f.fix) lines.push(`  ${' '.repeat(5)}  ${' '.repeat(9)}  fix: ${f.fix}`);
    }
  }
  const errors = report.findings.filter((f) => f.level === 'error').length;
  const warnings = report.findings.filter((f) => f.level === 'warn').length;
  lines.push(`${errors} error(s), ${warnings} warning(s)${errors > 0 ? ': locks fail on this cluster' : ''}`);
  return lines.join('\n');
}

function formatQueue(title: string, entries: readonly QueueEntry[]): string[] {
  if (entries.length === 0) return [];
  return [
    `  ${title}`,
    ...entries.map((e) => {
      const state = e.holds === undefined ? 'queued' : e.holds ? 'holds ' : 'waits ';
      const ttl = e.ttlMs === undefined ? 'ttl -' : `ttl ${(e.ttlMs / 1_000).toFixed(0)} s`;
      return `    ${state}  ${e.mode.padEnd(6)}  token ${e.token}  ${ttl}  owner ${e.owner}`;
    }),
  ];
}

function formatInspection(state: Inspection): string {
  const holder = state.lock.find((e) => e.holds);
  const waiting = state.lock.filter((e) => e.holds === false).length;
  const permits = state.semaphore.length > 0 ? `; ${state.semaphore.length} semaphore key(s)` : '';
  const head = holder
    ? `${state.resource}: held by ${holder.owner} (${holder.mode}, token ${holder.token}), ${waiting} waiting${permits}`
    : `${state.resource}: the lock is free${permits}`;
  return [
    `${head} (etcd revision ${state.revision})`,
    ...formatQueue('lock queue, oldest first:', state.lock),
    ...formatQueue('semaphore queue, oldest first (the `permits` oldest hold):', state.semaphore),
  ].join('\n');
}

function formatRelease(r: ForceRelease, reason: string): string {
  if (r.released === 0) return `${r.resource}: nothing to release, no lease held it (reason: ${reason})`;
  const also = r.alsoReleased.length > 0 ? `; the same lease(s) also held ${r.alsoReleased.join(', ')}, freed too` : '';
  return (
    `force-released ${r.resource}: revoked ${r.released} lease(s) (owner ${r.owners.join(', ')})${also}; ` +
    `every later holder's fencing token is above ${r.revokedToken} (reason: ${reason})`
  );
}

/** Runs one command against etcd; resolves with the exit code. */
export async function runEtcdCommand(c: EtcdCommand): Promise<number> {
  if (c.command === 'watch') throw c.usage('watch does not support --etcd yet: use etcdctl watch --prefix redlock/');
  if (!['check', 'inspect', 'release'].includes(c.command)) throw c.usage(`unknown command: ${c.command}`);
  if (c.command === 'inspect' && !c.resource) throw c.usage('inspect needs a resource: redlock-nest inspect <resource> --etcd <urls>');
  if (c.command === 'release') {
    if (!c.resource) throw c.usage('release needs a resource: redlock-nest release --force <resource> --reason "..." --etcd <urls>');
    if (!c.force) throw c.usage('release frees a lock someone may hold: confirm with --force');
    if (!c.reason) throw c.usage('release needs --reason "...": it is printed with the result, for the record');
  }
  const operator = await operatorFor(c);
  try {
    if (c.command === 'check') {
      const report = await operator.check();
      c.print(c.json ? toJson(report) : formatCheck(report));
      return report.ok ? 0 : 1;
    }
    if (c.command === 'inspect') {
      const state = await operator.inspect(c.resource!);
      c.print(c.json ? toJson(state) : formatInspection(state));
      return 0;
    }
    const result = await operator.forceRelease(c.resource!, { reason: c.reason! });
    c.print(c.json ? toJson({ ...result, reason: c.reason }) : formatRelease(result, c.reason!));
    return 0;
  } finally {
    await operator.close();
  }
}
