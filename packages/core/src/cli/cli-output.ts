/**
 * Human-readable output of the `redlock-nest` CLI (`--json` prints the objects instead),
 * and the progress line it shows on stderr while slow nodes are probed.
 */
import { ALL_NODES, type NodeCheckReport } from '../safety/node-check.js';
import type { ForceReleaseResult, LockInspection } from '../operator/operator.js';

/** JSON with bigints as decimal strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

const LEVEL = { ok: 'ok   ', warn: 'WARN ', error: 'ERROR' } as const;

export function formatCheck(report: NodeCheckReport, quorum: number): string {
  const lines: string[] = [];
  const nodes = [...new Set(report.findings.map((f) => f.node))];
  lines.push(`redlock-nest check: ${nodes.filter((n) => n !== ALL_NODES).length} node(s), quorum ${quorum}`);
  for (const node of nodes) {
    lines.push(node);
    for (const f of report.findings.filter((x) => x.node === node)) {
      lines.push(`  ${LEVEL[f.level]}  ${f.check.padEnd(11)}  ${f.message}`);
      if (f.fix) lines.push(`  ${' '.repeat(5)}  ${' '.repeat(11)}  fix: ${f.fix}`);
    }
  }
  const errors = report.findings.filter((f) => f.level === 'error').length;
  const warnings = report.findings.filter((f) => f.level === 'warn').length;
  lines.push(`${errors} error(s), ${warnings} warning(s)${errors > 0 ? ': locks on these nodes are not safe' : ''}`);
  return lines.join('\n');
}

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(1)} s`;

/** What holds the resource, as a quorum sees it: the first line of `inspect`. */
function headline(state: LockInspection): string {
  const held = state.nodes.filter((n) => n.held && !n.readPhase).length;
  const of = `quorum ${state.quorum}`;
  if (state.holder) return `${state.resource}: held by ${state.holder} on ${held}/${state.nodes.length} node(s) (${of})`;
  if (state.readers) return `${state.resource}: read-locked by ${state.readers.count} reader(s) on a quorum (${of})`;
  if (state.permits && (state.permits.held > 0 || state.permits.of !== undefined)) {
    const size = state.permits.of === undefined ? '' : ` of ${state.permits.of}`;
    return `${state.resource}: semaphore, ${state.permits.held}${size} permit(s) in use on a quorum (${of})`;
  }
  return `${state.resource}: not held by any owner on a quorum (${held}/${state.nodes.length} node(s) have a key, ${of})`;
}

/** The holders and queues of the primitives, one line each. */
function primitiveLines(state: LockInspection): string[] {
  const lines: string[] = [];
  for (const r of state.readers?.holders ?? []) lines.push(`  reader  ${r.owner}  on ${r.nodes} node(s)  ttl ${seconds(r.ttlMs)}`);
  if (state.writersWaiting) lines.push(`  writers waiting: ${state.writersWaiting} (new readers wait behind them)`);
  for (const p of state.permits?.holders ?? [])
    lines.push(`  permit ${p.slot}  ${p.owner}  on ${p.nodes} node(s)  ttl ${seconds(p.ttlMs)}`);
  if (state.fairQueue) lines.push(`  fair queue (next first): ${state.fairQueue.join(', ')}`);
  if (state.queued) lines.push(`  processes queued for the release: ${state.queued}`);
  return lines;
}

export function formatInspection(state: LockInspection): string {
  const rows = state.nodes.map((n) => {
    if (!n.reachable) return `  ${n.node}  unreachable: ${n.error ?? ''}`;
    const parts = [
      n.readPhase ? `read phase  ttl ${seconds(n.ttlMs!)}` : n.held ? `held  ttl ${seconds(n.ttlMs!)}  owner ${n.owner}` : 'free',
    ];
    const p = n.primitives;
    if (p?.readers) parts.push(`readers ${p.readers.length}`);
    if (p?.writersWaiting) parts.push(`writers waiting ${p.writersWaiting}`);
    if (p?.readersQueued) parts.push(`readers queued ${p.readersQueued}`);
    if (p?.permits) parts.push(`permits ${p.permits.map((x) => x.slot).join(',')}`);
    if (p?.fairQueue) parts.push(`fair queue ${p.fairQueue.length}`);
    if (p?.queued) parts.push(`queued ${p.queued}`);
    if (n.fencingCounter !== undefined) parts.push(`fence ${n.fencingCounter}`);
    if (n.waiters !== undefined) parts.push(`waiters ${n.waiters}`);
    return `  ${n.node}  ${parts.join('  ')}`;
  });
  return [headline(state), ...primitiveLines(state), ...rows].join('\n');
}

export function formatRelease(result: ForceReleaseResult, reason: string): string {
  return `force-released ${result.resource}: deleted on ${result.released} node(s), fencing counter now ${result.fencingCounter} (reason: ${reason})`;
}

/**
 * A progress line on stderr, shown only once probing takes longer than `afterMs`: rewritten
 * in place on a terminal, one line per second otherwise (logs of CI and deploy scripts).
 */
export class ProgressLine {
  private readonly pending: Set<string>;
  private timer: NodeJS.Timeout | undefined;
  private shown = false;

  constructor(
    nodes: readonly string[],
    private readonly stream: NodeJS.WriteStream = process.stderr,
    afterMs = 500,
  ) {
    this.pending = new Set(nodes);
    this.timer = setTimeout(() => this.tick(), afterMs);
  }

  done(node: string): void {
    this.pending.delete(node);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.shown && this.stream.isTTY) this.stream.write('\r\x1b[K');
  }

  private tick(): void {
    if (this.pending.size === 0) return;
    const line = `probing: waiting for ${[...this.pending].join(', ')}…`;
    this.stream.write(this.stream.isTTY ? `\r\x1b[K${line}` : `${line}\n`);
    this.shown = true;
    this.timer = setTimeout(() => this.tick(), 1_000);
  }
}
