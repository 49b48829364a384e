/** Who holds a resource in the table. */
interface Entry {
  readonly owner: string;
  expiresAt: number;
}

/** The outcome of trying to take resources. */
export type TakeResult = { readonly ok: true } | { readonly ok: false; readonly retryAfterMs: number };

/**
 * The in-process lock table behind {@link RedlockTestingModule}: resource → owner and expiry,
 * all-or-nothing for several resources, like the Redis script. Expiry is checked lazily against
 * `performance.now()`, so a held entry needs no timer. Changes (a take or a release) wake
 * whoever awaits {@link changed}: waiting in tests is event-driven, never polling.
 */
export class InMemoryLockTable {
  private readonly entries = new Map<string, Entry>();
  private readonly fences = new Map<string, bigint>();
  private listeners: Array<() => void> = [];

  /** Takes every resource for `owner`, or none when any is held by someone else. */
  take(resources: readonly string[], owner: string, ttlMs: number): TakeResult {
    const now = performance.now();
    let retryAfterMs = -1;
    for (const r of resources) {
      const entry = this.live(r, now);
      if (entry && entry.owner !== owner) retryAfterMs = Math.max(retryAfterMs, Math.ceil(entry.expiresAt - now));
    }
    if (retryAfterMs >= 0) return { ok: false, retryAfterMs };
    for (const r of resources) this.entries.set(r, { owner, expiresAt: now + ttlMs });
    this.notify();
    return { ok: true };
  }

  /** Extends `owner`'s entries; false when any of them is gone or someone else's. */
  extend(resources: readonly string[], owner: string, ttlMs: number): boolean {
    const now = performance.now();
    if (!resources.every((r) => this.live(r, now)?.owner === owner)) return false;
    for (const r of resources) this.entries.get(r)!.expiresAt = now + ttlMs;
    return true;
  }

  /** Deletes `owner`'s entries; returns how many were still there. */
  release(resources: readonly string[], owner: string): number {
    const now = performance.now();
    let released = 0;
    for (const r of resources) {
      if (this.live(r, now)?.owner === owner) {
        this.entries.delete(r);
        released++;
      }
    }
    this.notify();
    return released;
  }

  /** Deletes `resource`'s entry whoever holds it; returns the owner it had. */
  drop(resource: string): string | undefined {
    const entry = this.live(resource, performance.now());
    this.entries.delete(resource);
    this.notify();
    return entry?.owner;
  }

  /** The current owner of `resource`, if any. */
  owner(resource: string): string | undefined {
    return this.live(resource, performance.now())?.owner;
  }

  /** The next fencing token of `resource`: 1, 2, 3… per table. */
  nextFence(resource: string): bigint {
    const next = (this.fences.get(resource) ?? 0n) + 1n;
    this.fences.set(resource, next);
    return next;
  }

  /** Resolves at the next take or release (or when `signal` aborts). */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal?.removeEventListener('abort', done);
        this.listeners = this.listeners.filter((l) => l !== done);
        resolve();
      };
      this.listeners.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Forgets every entry and fencing counter. */
  clear(): void {
    this.entries.clear();
    this.fences.clear();
    this.notify();
  }

  private live(resource: string, now: number): Entry | undefined {
    const entry = this.entries.get(resource);
    if (entry && entry.expiresAt <= now) {
      this.entries.delete(resource);
      return undefined;
    }
    return entry;
  }

  private notify(): void {
    const woken = this.listeners;
    this.listeners = [];
    for (const wake of woken) wake();
  }
}
