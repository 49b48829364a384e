/**
 * Shared fixtures of the NestJS tests: direct Redis clients that look at lock keys behind the
 * library's back, unique resource names, and a deferred to hold a locked call open.
 */
import type { LoggerService } from '@nestjs/common';
import { Redis } from 'ioredis';

export { lockKey, rejection, uniqueResource as unique, until } from '../harness/test-utils.js';

/** A promise with its resolver, to keep a locked call running until the test lets it finish. */
export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Calls inside a critical section wait at `pass` until the test opens the gate; `inside` counts them. */
export class Gate {
  inside = 0;
  private open: Deferred = deferred();
  async pass(): Promise<void> {
    this.inside++;
    await this.open.promise;
    this.inside--;
  }
  release(): void {
    this.open.resolve();
    this.open = deferred();
  }
}

/** A plain client for looking at keys. */
export function directClient(url: string): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/**
 * Records entries and exits of critical sections per key and fails on any overlap:
 * the observable definition of mutual exclusion.
 */
export class OverlapProbe {
  private readonly inside = new Map<string, number>();
  maxConcurrent = 0;
  overlaps = 0;
  readonly order: string[] = [];

  enter(key: string): void {
    const n = (this.inside.get(key) ?? 0) + 1;
    this.inside.set(key, n);
    if (n > 1) this.overlaps++;
    let total = 0;
    for (const v of this.inside.values()) total += v;
    this.maxConcurrent = Math.max(this.maxConcurrent, total);
    this.order.push(`enter:${key}`);
  }

  exit(key: string): void {
    this.inside.set(key, (this.inside.get(key) ?? 1) - 1);
    this.order.push(`exit:${key}`);
  }
}

/** One run of a critical section: when it started and ended (`performance.now()`), and for which key. */
export interface Interval {
  readonly key: string;
  readonly label: string;
  readonly start: number;
  end: number | undefined;
}

/**
 * Records each run of a critical section as an interval per key. Mutual exclusion holds when
 * no two intervals of one key overlap; a run that never ended overlaps everything after it.
 */
export class IntervalLog {
  readonly runs: Interval[] = [];

  /** Marks the start of a run; call the returned function when it ends. */
  begin(key: string, label: string): () => void {
    const run: Interval = { key, label, start: performance.now(), end: undefined };
    this.runs.push(run);
    return () => {
      run.end = performance.now();
    };
  }

  /** Pairs of runs of one key that were inside at the same time, as readable strings. */
  overlaps(key?: string): string[] {
    const found: string[] = [];
    const runs = key === undefined ? this.runs : this.runs.filter((r) => r.key === key);
    for (const [i, a] of runs.entries()) {
      for (const b of runs.slice(i + 1)) {
        if (a.key !== b.key) continue;
        const aEnd = a.end ?? Infinity;
        const bEnd = b.end ?? Infinity;
        if (a.start < bEnd && b.start < aEnd) found.push(`${a.label} and ${b.label} on ${a.key}`);
      }
    }
    return found;
  }

  labels(key: string): string[] {
    return this.runs.filter((r) => r.key === key).map((r) => r.label);
  }
}

/** Collects what the app logs, by level. */
export class RecordingLogger implements LoggerService {
  readonly lines: Array<{ level: string; message: string }> = [];
  private waiters: Array<() => void> = [];
  log(message: unknown): void {
    this.push('log', message);
  }
  warn(message: unknown): void {
    this.push('warn', message);
  }
  error(message: unknown): void {
    this.push('error', message);
  }
  /** Resolves once a line containing `text` was logged. */
  async logged(text: string): Promise<void> {
    while (!this.lines.some((l) => l.message.includes(text))) await new Promise<void>((r) => this.waiters.push(r));
  }
  private push(level: string, message: unknown): void {
    this.lines.push({ level, message: String(message) });
    const woken = this.waiters;
    this.waiters = [];
    for (const wake of woken) wake();
  }
}
