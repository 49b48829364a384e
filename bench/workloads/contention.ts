/**
 * Contention on one key: P processes (forked from `contention-worker.ts`) × W workers each,
 * one library instance per process, the shape of a multi-instance deployment (P = 1 is
 * the in-process case). Each worker loops: acquire, a ~1 ms asynchronous critical section,
 * release, then a pause before competing again. The pause (longer than a hand-off) keeps
 * the releaser out of the next race, so each gap is a hand-off to a worker that was already
 * waiting, without any coordination on the lock's path. Sections are sent to the parent
 * after the run, so no IPC runs while the lock is contended.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ContenderName, Profile } from '../contenders.js';
import { summarize, type ContentionResult, type Section } from '../handoff-log.js';
import type { BenchNodes } from '../nodes.js';
import { nowMs } from '../stats.js';

/** The shape of one contention run. */
export interface Shape {
  readonly processes: number;
  readonly workers: number;
  /** Length of the critical section (ms). */
  readonly holdMs: number;
  /** A worker's pause after its release before it competes again (ms). */
  readonly pauseMs: number;
}

/**
 * The work done under the lock: about 1 ms, asynchronous. With an empty, synchronous one the
 * worker nudged at an acquisition would queue its attempt right behind the holder's release on
 * the shared connection and "win" every hand-off without ever having waited.
 */
export function criticalSection(holdMs = 1): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, holdMs));
}

export interface ContentionRun extends ContentionResult {
  /** Redis commands (all nodes, including those scripts run) per critical section. */
  readonly commandsPerSection: number;
  /** Acquisitions that gave up (a library's own acquire timeout). */
  readonly failures: number;
}

/** What a child is started with (one JSON argument). */
export interface ChildArgs {
  readonly name: ContenderName;
  readonly profile: Profile;
  readonly key: string;
  readonly urls: readonly string[];
  readonly shape: Shape;
}

/** Messages between the parent and a contention child. */
export type ToChild = { type: 'go'; until: number };
export type FromChild =
  { type: 'ready' } | { type: 'done'; sections: Array<Omit<Section, 'worker'> & { worker: number }>; failures: number };

const WORKER = fileURLToPath(new URL('../contention-worker.js', import.meta.url));

export async function contend(
  name: ContenderName,
  profile: Profile,
  nodes: BenchNodes,
  shape: Shape,
  durationMs: number,
  key: string,
): Promise<ContentionRun> {
  const args: ChildArgs = { name, profile, key, urls: nodes.urls, shape };
  const children = Array.from({ length: shape.processes }, () =>
    fork(WORKER, [JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const sections: Section[] = [];
  let failures = 0;
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('error', reject);
            child.once('exit', (code) => reject(new Error(`a ${name} child exited with ${code} before it was ready`)));
            child.on('message', (m: FromChild) => m.type === 'ready' && resolve());
          }),
      ),
    );
    await nodes.resetStats();
    const finished = children.map(
      (child, p) =>
        new Promise<void>((resolve) => {
          child.on('message', (m: FromChild) => {
            if (m.type !== 'done') return;
            for (const s of m.sections) sections.push({ ...s, worker: p * shape.workers + s.worker });
            failures += m.failures;
            resolve();
          });
        }),
    );
    const start = nowMs();
    for (const child of children) child.send({ type: 'go', until: start + durationMs } satisfies ToChild);
    await Promise.all(finished);
    const elapsed = durationMs; // children report the sections released before the deadline
    const commands = await nodes.commands();
    const result = summarize(sections, shape.processes * shape.workers, elapsed, shape.workers);
    return { ...result, commandsPerSection: commands / Math.max(1, result.sections), failures };
  } finally {
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
              child.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
            }),
      ),
    );
  }
}
