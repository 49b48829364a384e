/**
 * Soak mode (`npm run chaos -- --soak [--cycles N]`): 1,000,000 acquire/release cycles
 * in one process against three real nodes, mixing plain cycles, contended waits (woken
 * by release notices) and using() with watchdog extensions. Heap (after a forced GC,
 * with --expose-gc) and active handles are sampled along the way; afterwards the
 * Redlock is closed and no handle it opened may remain.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Redlock } from '@redlock-nest/core';
import { RedisCluster } from '../../test/harness/redis-server.js';

const DEFAULT_CYCLES = 1_000_000;
const CONCURRENCY = 32;
const SAMPLES = 20;
/** Heap growth between the warmed-up start and the end that still counts as noise. */
const HEAP_NOISE_BYTES = 8 * 1024 * 1024;
/**
 * Failed cycles tolerated per cycle. On a shared, overloaded machine an event-loop stall
 * can outlast a short TTL (the lock is then correctly reported lost) or a node timeout;
 * the soak is about leaks, so rare load-induced failures are reported, not fatal.
 */
const ERROR_RATE_BOUND = 1e-4;

export interface SoakSample {
  readonly cycles: number;
  readonly heapUsed: number;
  readonly rss: number;
  readonly handles: Record<string, number>;
  readonly activeLocks: number;
}

export interface SoakReport {
  readonly cycles: number;
  readonly seconds: number;
  readonly watchdogCycles: number;
  readonly contendedCycles: number;
  readonly errors: Record<string, number>;
  readonly samples: SoakSample[];
  readonly heapGrowthBytes: number;
  readonly handlesBefore: Record<string, number>;
  readonly handlesAfterClose: Record<string, number>;
  readonly leftHandles: Record<string, number>;
  readonly passed: boolean;
}

function handles(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of process.getActiveResourcesInfo()) out[h] = (out[h] ?? 0) + 1;
  return out;
}

async function settle(): Promise<void> {
  // Let closed sockets and cleared timers leave the loop, then collect garbage.
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  (globalThis as { gc?: () => void }).gc?.();
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** Handle kinds present after close beyond what was there before the Redlock existed. */
function leftOver(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v > (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

export async function soak(total: number, log: (line: string) => void): Promise<SoakReport> {
  const cluster = await RedisCluster.start(3);
  try {
    // Logging opens the stdout handle lazily: open it before the baseline is taken.
    log(`${total} cycles, ${CONCURRENCY} concurrent loops, 3 nodes`);
    await settle();
    const handlesBefore = handles();
    const redlock = new Redlock(cluster.urls, { nodeTimeoutMs: 500, onWarning: (m) => log(`warning: ${m}`) });
    const errors: Record<string, number> = {};
    const samples: SoakSample[] = [];
    const every = Math.max(1, Math.floor(total / SAMPLES));
    let started = 0;
    let done = 0;
    let watchdogCycles = 0;
    let contendedCycles = 0;
    let nextSample = every;
    const t0 = performance.now();

    const sample = async (): Promise<void> => {
      (globalThis as { gc?: () => void }).gc?.();
      const m = process.memoryUsage();
      samples.push({ cycles: done, heapUsed: m.heapUsed, rss: m.rss, handles: handles(), activeLocks: redlock.activeLocks });
      log(
        `${done} cycles, heap ${(m.heapUsed / 1048576).toFixed(1)} MB, rss ${(m.rss / 1048576).toFixed(0)} MB, ${process.getActiveResourcesInfo().length} handles`,
      );
    };

    const cycle = async (loop: number, n: number): Promise<void> => {
      if (n % 1000 === 0) {
        // using() with a watchdog: ttl 900 ms, held 400 ms, so it is extended at 300 ms. A TTL
        // several times the extension interval rides out event-loop stalls of a loaded machine.
        watchdogCycles++;
        await redlock.using(`soak-using-${loop}`, 900, () => new Promise((resolve) => setTimeout(resolve, 400)));
      } else if (n % 10 === 0) {
        // A contended resource: waits, woken by release notices.
        contendedCycles++;
        const lock = await redlock.acquire(`soak-hot-${n % 4}`, 2_000, { timeoutMs: 10_000, fencing: n % 20 === 0 });
        await lock.release();
      } else {
        const lock = await redlock.acquire(`soak-${loop}-${n % 16}`, 2_000);
        await lock.release();
      }
    };

    const worker = async (loop: number): Promise<void> => {
      while (started < total) {
        const n = ++started;
        try {
          await cycle(loop, n);
        } catch (err) {
          const name = err instanceof Error ? err.name : typeof err;
          errors[name] = (errors[name] ?? 0) + 1;
        }
        done++;
        if (done >= nextSample) {
          nextSample += every;
          await sample();
        }
      }
    };
    await sample();
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => worker(i)));
    const seconds = (performance.now() - t0) / 1000;
    await sample();
    await redlock.close();
    // Taken at once, not after a grace period: close() resolves only when every
    // connection it owned has ended, so anything still here is a leak.
    const handlesAfterClose = handles();

    // Growth: the end against the start after warm-up (the first fifth of the run).
    const warm = samples
      .filter((s) => s.cycles >= total / 5)
      .slice(0, 3)
      .map((s) => s.heapUsed);
    const end = samples.slice(-3).map((s) => s.heapUsed);
    const heapGrowthBytes = median(end) - median(warm);
    const leftHandles = leftOver(handlesBefore, handlesAfterClose);
    const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
    return {
      cycles: done,
      seconds,
      watchdogCycles,
      contendedCycles,
      errors,
      samples,
      heapGrowthBytes,
      handlesBefore,
      handlesAfterClose,
      leftHandles,
      passed: heapGrowthBytes < HEAP_NOISE_BYTES && Object.keys(leftHandles).length === 0 && errorCount <= done * ERROR_RATE_BOUND,
    };
  } finally {
    await cluster.stop();
  }
}

/** The CLI of the soak mode: prints the table, writes the JSON, returns the exit code. */
export async function runSoak(o: { cycles?: number | undefined; out?: string | undefined }): Promise<number> {
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    console.log('soak: run node with --expose-gc (npm run chaos does) for meaningful heap samples');
  }
  const r = await soak(o.cycles ?? DEFAULT_CYCLES, (line) => console.log(`soak: ${line}`));
  const mb = (b: number): string => `${(b / 1048576).toFixed(2)} MB`;
  const rows: Array<[string, string]> = [
    ['cycles', `${r.cycles} in ${r.seconds.toFixed(0)} s (${Math.round(r.cycles / r.seconds)}/s)`],
    ['watchdog / contended cycles', `${r.watchdogCycles} / ${r.contendedCycles}`],
    ['failed cycles', `${JSON.stringify(r.errors)} (bound: ${ERROR_RATE_BOUND * r.cycles})`],
    ['heap first → last sample', `${mb(r.samples[0]!.heapUsed)} → ${mb(r.samples[r.samples.length - 1]!.heapUsed)}`],
    ['heap growth after warm-up', `${mb(r.heapGrowthBytes)} (noise bound ${mb(HEAP_NOISE_BYTES)})`],
    ['max handles while running', String(Math.max(...r.samples.map((s) => Object.values(s.handles).reduce((a, b) => a + b, 0))))],
    ['handles left after close', JSON.stringify(r.leftHandles)],
    ['result', r.passed ? 'PASS' : 'FAIL'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(rows.map(([k, v]) => `${k.padEnd(width)} | ${v}`).join('\n'));
  const out = o.out ?? join(tmpdir(), `redlock-soak-${Date.now()}.json`);
  writeFileSync(out, JSON.stringify(r, null, 2));
  console.log(`report: ${out}`);
  return r.passed ? 0 : 1;
}
