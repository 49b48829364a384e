/**
 * Lock throughput driven from several client processes (forked from cluster-load-worker.ts):
 * one process on 2 cores is a bottleneck of its own, so a topology that adds servers can only
 * show what it adds when the load comes from more than one client.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisNodeInput, RedlockOptions } from '@redlock-nest/core';

/** What a child gets: JSON-serializable nodes (URLs, `{ cluster: urls }`) and options. */
export interface LoadArgs {
  readonly nodes: RedisNodeInput[];
  readonly options: Pick<RedlockOptions, 'replicaSync'>;
  readonly workers: number;
  readonly tag: string;
}

export type LoadToChild = { type: 'go'; until: number };
export type LoadFromChild = { type: 'ready' } | { type: 'done'; ops: number };

const WORKER = fileURLToPath(new URL('./cluster-load-worker.js', import.meta.url));

/**
 * `workers` loops in total, split over `processes` children, each acquire+release on its own
 * resource for `durationMs` (started together once every child is connected): ops/s of all of them.
 */
export async function throughputFromProcesses(
  nodes: RedisNodeInput[],
  options: LoadArgs['options'],
  processes: number,
  workers: number,
  durationMs: number,
  tag: string,
): Promise<number> {
  const perChild = Math.ceil(workers / processes);
  const children = Array.from({ length: processes }, (_, p) =>
    fork(WORKER, [JSON.stringify({ nodes, options, workers: perChild, tag: `${tag}:${p}` } satisfies LoadArgs)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            child.once('error', reject);
            child.once('exit', (code) => reject(new Error(`a load child exited with ${code} before it was ready`)));
            child.on('message', (m: LoadFromChild) => m.type === 'ready' && resolve());
          }),
      ),
    );
    const results = children.map(
      (child) =>
        new Promise<number>((resolve) => {
          child.on('message', (m: LoadFromChild) => m.type === 'done' && resolve(m.ops));
        }),
    );
    const until = Date.now() + durationMs;
    for (const child of children) child.send({ type: 'go', until } satisfies LoadToChild);
    const ops = (await Promise.all(results)).reduce((a, b) => a + b, 0);
    return (ops * 1000) / durationMs;
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
