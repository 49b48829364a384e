/**
 * `redlock-nest check`: probes every listed node and prints the whole report. A server listed
 * twice is one of its findings (an ERROR `duplicate` row, exit 1) instead of the Redlock
 * constructor's refusal ending the run before the other nodes were looked at: an operator
 * checking a configuration wants every problem of it at once.
 */
import { ProgressLine, formatCheck, toJson } from './cli-output.js';
import type { NodeCheckReport, NodeFinding } from '../safety/node-check.js';
import { serverAddress } from '../nodes/node-input.js';
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

/** Runs `check`; returns the exit code (1 when a finding is an error). */
export async function runCheck(
  urls: readonly string[],
  options: RedlockOptions,
  json: boolean,
  print: (text: string) => void,
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
    const findings = [...probed.findings, ...listed.duplicates];
    const report: NodeCheckReport = { ok: probed.ok && listed.duplicates.length === 0, findings };
    // The quorum of the list as configured: what a Redlock over these entries would need.
    const quorum = Math.floor(urls.length / 2) + 1;
    print(json ? toJson({ quorum, ...report }) : formatCheck(report, quorum));
    return report.ok ? 0 : 1;
  } finally {
    await redlock.close();
  }
}
