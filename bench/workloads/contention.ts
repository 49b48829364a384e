/**
 * Contention on one key with forced hand-offs: a worker that released does not try again
 * until another worker acquired, so every gap measured is a real hand-off to a waiter.
 * In one process (W workers sharing one library instance) or across processes (one
 * worker per child, hand-offs coordinated by the parent over IPC, off the lock's path).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ContenderName } from '../contenders.js';
import { createContender } from '../contenders.js';
import { summarize, type ContentionResult, type Section } from '../handoff-log.js';
import type { BenchNodes } from '../nodes.js';
import { nowMs } from '../stats.js';

const TTL = 10_000;

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
}

export async function inProcess(
  name: ContenderName,
  nodes: BenchNodes,
  workers: number,
  durationMs: number,
  key: string,
  holdMs = 1,
): Promise<ContentionRun> {
  const c = await createContender(name, nodes.urls);
  try {
    await (await c.acquire(key, TTL)).release(); // connect and load scripts outside the measurement
    await nodes.resetStats();
    const sections: Section[] = [];
    let turn = 0; // count of acquisitions so far
    let nudge: Array<() => void> = [];
    const end = performance.now() + durationMs;
    const start = nowMs();
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        while (performance.now() < end) {
          const held = await c.acquire(key, TTL);
          const acquiredAt = nowMs();
          const mine = ++turn;
          const wake = nudge;
          nudge = [];
          for (const resolve of wake) resolve();
          await criticalSection(holdMs);
          const releasedAt = nowMs();
          await held.release();
          sections.push({ worker: w, acquiredAt, releasedAt });
          // Forced hand-off: wait until someone else acquired after us.
          while (turn === mine && performance.now() < end) await new Promise<void>((resolve) => nudge.push(resolve));
        }
        for (const resolve of nudge.splice(0)) resolve();
      }),
    );
    const elapsed = nowMs() - start;
    const commands = await nodes.commands();
    const result = summarize(sections, workers, elapsed);
    return { ...result, commandsPerSection: commands / Math.max(1, result.sections) };
  } finally {
    await c.close();
  }
}

/** Messages between the parent and a contention child. */
export type ToChild = { type: 'go'; until: number } | { type: 'turn' } | { type: 'stop' };
export type FromChild =
  { type: 'ready' } | { type: 'acquired'; at: number } | { type: 'released'; acquiredAt: number; releasedAt: number } | { type: 'done' };

const WORKER = fileURLToPath(new URL('../contention-worker.js', import.meta.url));

export async function multiProcess(
  name: ContenderName,
  nodes: BenchNodes,
  processes: number,
  durationMs: number,
  key: string,
  holdMs = 1,
): Promise<ContentionRun> {
  const children = Array.from({ length: processes }, () =>
    fork(WORKER, [name, key, JSON.stringify(nodes.urls), String(holdMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const sections: Section[] = [];
  let holder = -1;
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('error', reject);
            child.on('message', (m: FromChild) => m.type === 'ready' && resolve());
          }),
      ),
    );
    await nodes.resetStats();
    const finished = children.map(
      (child, i) =>
        new Promise<void>((resolve) => {
          child.on('message', (m: FromChild) => {
            if (m.type === 'acquired') {
              // Someone else acquired: the previous holder may compete again.
              if (holder >= 0 && holder !== i) children[holder]!.send({ type: 'turn' } satisfies ToChild);
              holder = i;
            } else if (m.type === 'released') {
              sections.push({ worker: i, acquiredAt: m.acquiredAt, releasedAt: m.releasedAt });
            } else if (m.type === 'done') {
              resolve();
            }
          });
        }),
    );
    const start = nowMs();
    for (const child of children) child.send({ type: 'go', until: start + durationMs } satisfies ToChild);
    await new Promise((resolve) => setTimeout(resolve, durationMs));
    for (const child of children) child.send({ type: 'stop' } satisfies ToChild);
    await Promise.all(finished);
    const elapsed = Math.max(...sections.map((s) => s.releasedAt), start + 1) - start;
    const commands = await nodes.commands();
    const result = summarize(sections, processes, elapsed);
    return { ...result, commandsPerSection: commands / Math.max(1, result.sections) };
  } finally {
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null
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
