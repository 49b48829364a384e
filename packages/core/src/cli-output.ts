/**
 * Human-readable output of the `redlock-nest` CLI (`--json` prints the objects instead),
 * and the progress line it shows on stderr while slow nodes are probed.
 */
import type { NodeCheckReport } from './node-check.js';
import type { ForceReleaseResult, LockInspection } from './operator.js';

/** JSON with bigints as decimal strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

const LEVEL = { ok: 'ok   ', warn: 'WARN ', error: 'ERROR' } as const;

export function formatCheck(report: NodeCheckReport, quorum: number): string {
  const lines: string[] = [];
  const nodes = [...new Set(report.findings.map((f) => f.node))];
  lines.push(`redlock-nest check: ${nodes.length} node(s), quorum ${quorum}`);
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

export function formatInspection(state: LockInspection): string {
  const held = state.nodes.filter((n) => n.held).length;
  const head = state.holder
    ? `${state.resource}: held by ${state.holder} on ${held}/${state.nodes.length} node(s) (quorum ${state.quorum})`
    : `${state.resource}: not held by any owner on a quorum (${held}/${state.nodes.length} node(s) have a key, quorum ${state.quorum})`;
  const rows = state.nodes.map((n) => {
    if (!n.reachable) return `  ${n.node}  unreachable: ${n.error ?? ''}`;
    const parts = [n.held ? `held  ttl ${(n.ttlMs! / 1_000).toFixed(1)} s  owner ${n.owner}` : 'free'];
    if (n.fencingCounter !== undefined) parts.push(`fence ${n.fencingCounter}`);
    if (n.waiters !== undefined) parts.push(`waiters ${n.waiters}`);
    return `  ${n.node}  ${parts.join('  ')}`;
  });
  return [head, ...rows].join('\n');
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
