/**
 * Heap over many acquire/release cycles of our library, and what is left running after
 * close(). Needs `node --expose-gc`, so each reading is the live heap, not garbage.
 */
import { Redlock } from '@redlock-nest/core';

export interface HeapResult {
  readonly cycles: number;
  /** Live heap (MB) after warm-up, and after each tenth of the cycles. */
  readonly readingsMb: number[];
  /** Growth from the first reading to the median of the last three, in MB. */
  readonly growthMb: number;
  /** Timers and sockets still active after close(), beyond those before the Redlock existed. */
  readonly leftAfterClose: Record<string, number>;
}

function liveHeapMb(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1_048_576;
}

function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** `cycles` acquire/release pairs by 64 workers on distinct keys; one contended waiter too, so the notifier runs. */
export async function heap(urls: readonly string[], cycles: number): Promise<HeapResult> {
  const before = resources();
  const redlock = new Redlock([...urls]);
  const workers = 64;
  const perWorker = Math.ceil(cycles / workers);
  const tenth = Math.ceil(perWorker / 10);
  await redlock.using('heap:warm', 10_000, () => undefined);
  const readings = [liveHeapMb()];
  for (let part = 0; part < 10; part++) {
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        // Two workers share a key, so some acquisitions wait on release notices.
        const key = `heap:${w >> 1}`;
        for (let i = 0; i < tenth; i++) {
          const lock = await redlock.acquire(key, 10_000, { retry: { retries: Infinity } });
          await lock.release();
        }
      }),
    );
    readings.push(liveHeapMb());
  }
  await redlock.close();
  // Let sockets finish closing (their close events are the last thing they do).
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const after = resources();
  const leftAfterClose: Record<string, number> = {};
  for (const [name, count] of Object.entries(after)) {
    const extra = count - (before[name] ?? 0);
    if (extra > 0) leftAfterClose[name] = extra;
  }
  const tail = readings.slice(-3).sort((a, b) => a - b)[1]!;
  return { cycles: perWorker * workers, readingsMb: readings, growthMb: tail - readings[0]!, leftAfterClose };
}
