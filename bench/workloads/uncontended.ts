/** Uncontended workloads: one worker's latency, 64 workers' throughput, extend latency. */
import type { Contender } from '../contenders.js';
import { percentile } from '../stats.js';

const TTL = 10_000;

export interface LatencyResult {
  readonly p50Us: number;
  readonly p99Us: number;
  readonly opsPerSec: number;
}

/** Acquire + release, one at a time, on a key no one else uses. */
export async function latency(c: Contender, ops: number, tag: string): Promise<LatencyResult> {
  const samples = new Float64Array(ops);
  const start = performance.now();
  for (let i = 0; i < ops; i++) {
    const t0 = performance.now();
    const held = await c.acquire(`lat:${tag}`, TTL);
    await held.release();
    samples[i] = (performance.now() - t0) * 1000;
  }
  const elapsed = performance.now() - start;
  const list = Array.from(samples);
  return { p50Us: percentile(list, 50), p99Us: percentile(list, 99), opsPerSec: (ops * 1000) / elapsed };
}

/** `workers` loops, each on its own key, for `durationMs`: acquire+release per second. */
export async function throughput(c: Contender, workers: number, durationMs: number, tag: string): Promise<number> {
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const key = `tp:${tag}:${w}`;
      while (performance.now() < end) {
        const held = await c.acquire(key, TTL);
        await held.release();
        done++;
      }
    }),
  );
  return (done * 1000) / (performance.now() - start);
}

/** Extends one held lock `ops` times in sequence. */
export async function extend(c: Contender, ops: number, tag: string): Promise<LatencyResult> {
  const held = await c.acquire(`ext:${tag}`, TTL);
  const samples = new Float64Array(ops);
  const start = performance.now();
  try {
    for (let i = 0; i < ops; i++) {
      const t0 = performance.now();
      await held.extend(TTL);
      samples[i] = (performance.now() - t0) * 1000;
    }
  } finally {
    await held.release();
  }
  const list = Array.from(samples);
  return { p50Us: percentile(list, 50), p99Us: percentile(list, 99), opsPerSec: (ops * 1000) / (performance.now() - start) };
}
