/**
 * Read-write locks across processes (`--only=readwrite`): 3 processes × (3 readers, 1 writer,
 * 1 plain lock holder) on one resource, the mix of test/core/read-write-processes.test.ts, first
 * with the 5 nodes healthy, then with 2 of them paused (SIGSTOP). Sections are counted per
 * 1-second window for each side: the phase-fair policy's promise is that neither readers nor
 * writers starve, so the figure is the fewest sections a side got in any window (0 = a stall).
 * Also Redis commands per section (INFO commandstats, all nodes) and overlaps (must be 0).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BenchNodes } from '../nodes.js';
import { nowMs } from '../stats.js';

export type RwKind = 'read' | 'write' | 'plain';

/** How many loops of each kind a process runs, and their hold and pause (ms). */
export interface RwMix {
  readonly readers: number;
  readonly writers: number;
  readonly plain: number;
  readonly timing: Readonly<Record<RwKind, { readonly holdMs: number; readonly pauseMs: number }>>;
}

/** The mix and timing of the read-write processes test. */
export const MIX: RwMix = {
  readers: 3,
  writers: 1,
  plain: 1,
  timing: { read: { holdMs: 15, pauseMs: 5 }, write: { holdMs: 5, pauseMs: 10 }, plain: { holdMs: 5, pauseMs: 20 } },
};

export interface RwSection {
  readonly kind: RwKind;
  readonly acquiredAt: number;
  readonly releasedAt: number;
}

/**
 * The Redlock options of a run: library defaults (nodeTimeoutMs 500), and a short node timeout,
 * what test/core/read-write-processes.test.ts uses, since a paused node costs every round that
 * waits for its reply up to that timeout.
 */
export const RW_VARIANTS = [
  { label: 'defaults', options: {} },
  { label: 'nodeTimeoutMs 100', options: { nodeTimeoutMs: 100 } },
] as const;
export type RwOptions = { readonly nodeTimeoutMs?: number };

export interface RwChildArgs {
  readonly key: string;
  readonly urls: readonly string[];
  readonly mix: RwMix;
  readonly options: RwOptions;
}
export type RwToChild = { type: 'stop' };
export type RwFromChild = { type: 'ready' } | { type: 'done'; sections: RwSection[]; failures: number };

/** One phase (healthy, or 2 of 5 paused). */
export interface RwPhase {
  readonly phase: string;
  readonly windows: string;
  /** Sections of every kind released in the phase. */
  readonly sections: number;
  readonly 'read min/window': number;
  readonly 'read mean/window': number;
  readonly 'write min/window': number;
  readonly 'write mean/window': number;
  readonly 'plain min/window': number;
  readonly 'cmds/section': number;
  readonly overlaps: string;
}

/**
 * Sections that broke exclusion: a write or plain section that began while any other section was
 * on, or a read that began during a write or plain one. Timestamps are inside the true holding
 * (taken after acquire resolved, before release was called), so an overlap here is a real one.
 */
export function rwOverlaps(sections: readonly RwSection[]): number {
  const events = sections.flatMap((s) => [
    { t: s.acquiredAt, start: true, exclusive: s.kind !== 'read' },
    { t: s.releasedAt, start: false, exclusive: s.kind !== 'read' },
  ]);
  events.sort((a, b) => a.t - b.t || Number(a.start) - Number(b.start)); // ends first at a tie
  let readers = 0;
  let exclusive = 0;
  let overlaps = 0;
  for (const e of events) {
    if (e.start && (exclusive > 0 || (e.exclusive && readers > 0))) overlaps++;
    if (e.exclusive) exclusive += e.start ? 1 : -1;
    else readers += e.start ? 1 : -1;
  }
  return overlaps;
}

/** Sections of `kind` released in each full 1-second window from `from`. */
export function perWindow(sections: readonly RwSection[], kind: RwKind, from: number, windows: number): number[] {
  const counts = new Array<number>(windows).fill(0);
  for (const s of sections) {
    const w = Math.floor((s.releasedAt - from) / 1000);
    if (s.kind === kind && w >= 0 && w < windows) counts[w]!++;
  }
  return counts;
}

function phaseOf(name: string, sections: readonly RwSection[], from: number, ms: number, commands: number): RwPhase {
  const windows = Math.floor(ms / 1000);
  const inPhase = sections.filter((s) => s.releasedAt >= from && s.releasedAt < from + ms);
  const side = (kind: RwKind): number[] => perWindow(sections, kind, from, windows);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return {
    phase: name,
    windows: String(windows),
    sections: inPhase.length,
    'read min/window': Math.min(...side('read')),
    'read mean/window': mean(side('read')),
    'write min/window': Math.min(...side('write')),
    'write mean/window': mean(side('write')),
    'plain min/window': Math.min(...side('plain')),
    'cmds/section': commands / Math.max(1, inPhase.length),
    overlaps: String(rwOverlaps(inPhase)),
  };
}

const WORKER = fileURLToPath(new URL('../read-write-worker.js', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs both phases of `phaseMs` each (whole seconds) and resumes the paused nodes before returning. */
export async function readWrite(
  nodes: BenchNodes,
  phaseMs: number,
  key: string,
  variant: (typeof RW_VARIANTS)[number],
  log: (m: string) => void,
): Promise<RwPhase[]> {
  const args: RwChildArgs = { key, urls: nodes.urls, mix: MIX, options: variant.options };
  const children = Array.from({ length: 3 }, () =>
    fork(WORKER, [JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const paused = [3, 4];
  const sections: RwSection[] = [];
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('exit', (code) => reject(new Error(`a read-write child exited with ${code} before it was ready`)));
            child.on('message', (m: RwFromChild) => m.type === 'ready' && resolve());
          }),
      ),
    );
    const done = children.map(
      (child) =>
        new Promise<void>((resolve) =>
          child.on('message', (m: RwFromChild) => {
            if (m.type !== 'done') return;
            sections.push(...m.sections);
            resolve();
          }),
        ),
    );
    log(`readwrite (${variant.label}): ${phaseMs / 1000} s healthy`);
    await nodes.resetStats();
    const healthyFrom = nowMs();
    await sleep(phaseMs);
    const healthyCommands = await nodes.commands();
    await nodes.resetStats();
    log(`readwrite (${variant.label}): ${phaseMs / 1000} s with nodes ${paused.join(', ')} of 5 paused`);
    for (const i of paused) nodes.pause(i);
    const pausedFrom = nowMs();
    await sleep(phaseMs);
    for (const child of children) child.send({ type: 'stop' } satisfies RwToChild);
    await Promise.all(done);
    // INFO on a paused node would hang: resume first (they then run what was queued for them).
    for (const i of paused) nodes.resume(i);
    const pausedCommands = await nodes.commands();
    return [
      phaseOf(`${variant.label}, healthy`, sections, healthyFrom, phaseMs, healthyCommands),
      phaseOf(`${variant.label}, ${paused.length} of 5 paused`, sections, pausedFrom, phaseMs, pausedCommands),
    ];
  } finally {
    for (const i of paused) nodes.resume(i);
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
