/**
 * Shared fixtures of the NestJS tests: direct Redis clients that look at lock keys behind the
 * library's back, unique resource names, and a deferred to hold a locked call open.
 */
import { Redis } from 'ioredis';

/** The Redis key of a resource's lock under the default prefix. */
export function lockKey(resource: string, prefix = 'redlock:'): string {
  return `${prefix}lock:${resource}`;
}

let counter = 0;
/** A resource id no other test uses, so tests sharing a server never interfere. */
export function unique(name: string): string {
  counter += 1;
  return `${name}${counter}x${Math.random().toString(36).slice(2, 8)}`;
}

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

/** A plain client for looking at keys. */
export function directClient(url: string): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/**
 * Polls until `predicate` holds. Only for states with no event to await (a key disappearing
 * after an aborted request); the bound turns a hang into a readable failure.
 */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, boundMs = 10_000): Promise<void> {
  const give = performance.now() + boundMs;
  while (!(await predicate())) {
    if (performance.now() > give) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What a promise rejected with (fails if it resolved). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
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
