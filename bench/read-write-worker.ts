/**
 * A child of the read-write run: R reader loops, W writer loops and P plain-lock loops on one
 * resource, one Redlock for the process (as a service instance has), until the parent says stop.
 * The same loops and timing as test/core/fixtures/rw-worker.mjs, without its observer log: the
 * sections are kept in memory and sent after the run, so no IPC runs while the lock is contended.
 */
import { Redlock } from '@redlock-nest/core';
import { nowMs } from './stats.js';
import type { RwChildArgs, RwFromChild, RwKind, RwSection, RwToChild } from './workloads/read-write.js';

const { key, urls, mix, options } = JSON.parse(process.argv[2]!) as RwChildArgs;
const TTL = 5_000;

// The variant's options, else library defaults, but for the retry budget: a waiter never gives up,
// the run measures progress.
const redlock = new Redlock([...urls], { ...options, retry: { retries: Infinity }, onWarning: () => undefined });
// Connect and load scripts outside the measurement.
await (await redlock.acquire(`${key}:warm:${process.pid}`, TTL)).release();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const sections: RwSection[] = [];
let failures = 0;
let over = false;
const stop = new Promise<void>((resolve) => {
  // The only message after 'ready' is the stop.
  process.once('message', (_m: RwToChild) => resolve());
});

async function loop(kind: RwKind): Promise<void> {
  const { holdMs, pauseMs } = mix.timing[kind];
  while (!over) {
    let lock;
    try {
      lock = await redlock.acquire(key, TTL, kind === 'plain' ? {} : { mode: kind });
    } catch {
      failures++;
      continue;
    }
    const acquiredAt = nowMs();
    await sleep(holdMs);
    const releasedAt = nowMs();
    await lock.release().catch(() => failures++);
    sections.push({ kind, acquiredAt, releasedAt });
    await sleep(pauseMs);
  }
}

const loops = [
  ...Array.from({ length: mix.readers }, () => loop('read')),
  ...Array.from({ length: mix.writers }, () => loop('write')),
  ...Array.from({ length: mix.plain }, () => loop('plain')),
];
process.send!({ type: 'ready' } satisfies RwFromChild);
// At stop the run is over whatever the loops are doing (a waiter stuck on a paused node included).
await stop;
over = true;
await Promise.race([Promise.all(loops), sleep(2_000)]);
process.send!({ type: 'done', sections, failures } satisfies RwFromChild, () => process.exit(0));
