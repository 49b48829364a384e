/**
 * `redlock-nest check`: probes every listed node and prints the whole report. A server listed
 * twice is one of its findings (an ERROR `duplicate` row, exit 1) instead of the Redlock
 * constructor's refusal ending the run before the other nodes were looked at: an operator
 * checking a configuration wants every problem of it at once.
 *
 * The restart rule needs the largest TTL in use, which no node can tell: with `--max-ttl`
 * each node that loses its locks on a restart is reported up long enough (or not yet: how
 * long to wait before restarting another one); without it, one warning says how to make
 * the TTL known to the processes, which otherwise count a node that restarted a moment
 * before they started.
 */
import { ProgressLine, formatCheck, toJson } from './cli-output.js';
import { ALL_NODES, type NodeCheckReport, type NodeFinding } from '../safety/node-check.js';
import { serverAddress } from '../nodes/node-input.js';
import { infoField } from '../nodes/node-commands.js';
import type { RedlockOptions } from '../options/options.js';
import { Redlock } from '../redlock.js';

/** The interval between the clock check's two TIME samples (`checkNodes`' default). */
const CLOCK_SAMPLE_MS = 500;

/** The listed nodes, each server once, and a finding per entry that repeats an earlier one. */
export interface ListedNodes {
  /** The first entry of each server, in the order listed. */
  readonly distinct: readonly string[];
  readonly duplicates: readonly NodeFinding[];
}

/** `host:port` of a URL as listed, never its credentials. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 6379}`;
  } catch {
    return 'an invalid URL';
  }
}

/**
 * Splits `urls` into each server's first entry and the entries that repeat one (same host and
 * port, loopback names counted as one host: the Redlock constructor's rule). Servers behind
 * different names are found by the probe itself (same `run_id`).
 */
export function listNodes(urls: readonly string[]): ListedNodes {
  const first = new Map<string, number>();
  const distinct: string[] = [];
  const duplicates: NodeFinding[] = [];
  urls.forEach((url, i) => {
    const address = serverAddress(url);
    const earlier = address === undefined ? undefined : first.get(address);
    if (earlier === undefined) {
      if (address !== undefined) first.set(address, i);
      distinct.push(url);
      return;
    }
    const shown = shownUrl(url);
    duplicates.push({
      // Its own group in the report, even when listed with the very same text as the first.
      node: `${shown} (nodes[${i}])`,
      check: 'duplicate',
      level: 'error',
      message:
        `nodes[${i}] (${shown}) is the same server as nodes[${earlier}] (${shownUrl(urls[earlier]!)}) (same address): ` +
        'one failure takes out two votes, and a Redlock refuses this list',
      fix: 'list each independent server once',
    });
  });
  return { distinct, duplicates };
}

/** Runs `check`; returns the exit code (1 when a finding is an error). `maxTtlMs`: `--max-ttl`, when given. */
export async function runCheck(
  urls: readonly string[],
  options: RedlockOptions,
  json: boolean,
  print: (text: string) => void,
  maxTtlMs?: number,
): Promise<number> {
  const listed = listNodes(urls);
  const redlock = new Redlock([...listed.distinct], options);
  try {
    // A healthy node answers within the clock check's sample: only a probe that waits longer is shown.
    const progress = new ProgressLine(
      redlock.nodes.map((n) => n.label),
      process.stderr,
      CLOCK_SAMPLE_MS + 1_000,
    );
    const probed = await redlock
      .checkNodes({ clockSampleMs: CLOCK_SAMPLE_MS, onNodeDone: (node) => progress.done(node) })
      .finally(() => progress.stop());
    const findings = [...probed.findings, ...listed.duplicates, ...(await restartFindings(redlock, probed.findings, maxTtlMs))];
    const report: NodeCheckReport = { ok: probed.ok && listed.duplicates.length === 0, findings };
    // The quorum of the list as configured: what a Redlock over these entries would need.
    const quorum = Math.floor(urls.length / 2) + 1;
    print(json ? toJson({ quorum, ...report }) : formatCheck(report, quorum));
    return report.ok ? 0 : 1;
  } finally {
    await redlock.close();
  }
}

/**
 * The restart rule's findings for the nodes that lose their locks on a restart (a `persistence`
 * finding other than ok): with the largest TTL, whether each has been up that long; without
 * it, one warning naming how to make it known.
 */
async function restartFindings(redlock: Redlock, probed: readonly NodeFinding[], maxTtlMs: number | undefined): Promise<NodeFinding[]> {
  const volatile = new Set(probed.filter((f) => f.check === 'persistence' && f.level !== 'ok').map((f) => f.node));
  if (volatile.size === 0) return [];
  if (maxTtlMs === undefined) {
    return [
      {
        node: ALL_NODES,
        check: 'restart',
        level: 'warn',
        message:
          'the largest TTL in use is not known: a process that starts while a majority of nodes restarted empty counts them, ' +
          'and can take a lock another process still holds, unless it knows the TTL (the Nest module declares its ttl and decorators)',
        fix: 'give every core Redlock restartRule: { maxTtlMs: <largest TTL> } (or declareTtl()), and pass --max-ttl <ms> to check',
      },
    ];
  }
  const found: NodeFinding[] = [];
  for (const node of redlock.nodes) {
    if (!volatile.has(node.label)) continue;
    const info = await node.call((client) => client.info('server')).catch(() => undefined);
    const uptimeS = info === undefined ? undefined : Number(infoField(info, 'uptime_in_seconds'));
    if (uptimeS === undefined || !Number.isFinite(uptimeS)) continue;
    const leftS = Math.ceil(maxTtlMs / 1_000 - uptimeS);
    found.push(
      leftS <= 0
        ? { node: node.label, check: 'restart', level: 'ok', message: `up ${uptimeS} s, past the largest TTL (${maxTtlMs} ms)` }
        : {
            node: node.label,
            check: 'restart',
            level: 'warn',
            message: `up ${uptimeS} s, less than the largest TTL (${maxTtlMs} ms): locks it lost in a restart may still be held elsewhere, so it sits out of quorums for ${leftS} s more`,
            fix: `wait ${leftS} s before restarting another node`,
          },
    );
  }
  return found;
}
