import { keepAlive } from './etcd-ops.js';
import type { EtcdTransport } from './http-transport.js';

/** Share of a lease's TTL after which it is renewed, as the core's watchdog extends a lock. */
const RENEW_AFTER_FRACTION = 1 / 3;
/** Pause before retrying a keep-alive that failed (no member answered). */
const RETRY_MS = 100;

interface Kept {
  readonly ttlMs: number;
  /** Monotonic time of the next renewal. */
  nextAt: number;
  /** Monotonic time by which the lease has surely expired without a renewal. */
  expiresAt: number;
  readonly gone: () => void;
}

/**
 * Keeps the leases of waiting acquisitions alive, all due leases in one request (the keep-alive
 * stream takes one message per lease). A waiter's lease must outlive its wait, or its place in
 * the queue would vanish with it. A renewal that fails is retried on any error until the lease's
 * own deadline (etcd #7357: keep-alive loops that stopped after one send error); a lease etcd
 * says is gone, or whose deadline passed, is reported once through `gone`.
 */
export class LeaseKeeper {
  private readonly leases = new Map<string, Kept>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private sending = false;

  constructor(private readonly transport: EtcdTransport) {}

  /** Keeps lease `id` (granted for `ttlSeconds`, `grantedAt` monotonic) alive until {@link remove}. */
  add(id: string, ttlSeconds: number, grantedAt: number, gone: () => void): void {
    const ttlMs = ttlSeconds * 1000;
    this.leases.set(id, { ttlMs, nextAt: grantedAt + ttlMs * RENEW_AFTER_FRACTION, expiresAt: grantedAt + ttlMs, gone });
    this.schedule();
  }

  remove(id: string): void {
    this.leases.delete(id);
    if (this.leases.size === 0) this.stop();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private schedule(): void {
    if (this.sending || this.leases.size === 0) return;
    let next = Infinity;
    for (const kept of this.leases.values()) next = Math.min(next, kept.nextAt);
    if (this.timer && this.timerAt <= next) return;
    clearTimeout(this.timer);
    this.timerAt = next;
    // Unref'd: a waiting acquisition keeps the process alive by its own deadline, not by this.
    this.timer = setTimeout(() => void this.renew(), Math.max(0, next - performance.now()));
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    // Everything due within the next retry pause goes in this one request.
    const due = [...this.leases].filter(([, k]) => k.nextAt <= now + RETRY_MS);
    if (due.length === 0) return this.schedule();
    this.sending = true;
    const deadline = Math.min(...due.map(([, k]) => k.expiresAt));
    try {
      const ttls = await keepAlive(
        this.transport,
        due.map(([id]) => id),
        deadline,
      );
      for (const [id, kept] of due) {
        const ttl = ttls.get(id) ?? 0;
        if (this.leases.get(id) !== kept) continue;
        if (ttl <= 0) {
          this.leases.delete(id);
          kept.gone();
          continue;
        }
        kept.expiresAt = now + ttl * 1000;
        kept.nextAt = now + kept.ttlMs * RENEW_AFTER_FRACTION;
      }
    } catch {
      const after = performance.now();
      for (const [id, kept] of due) {
        if (this.leases.get(id) !== kept) continue;
        if (after >= kept.expiresAt) {
          this.leases.delete(id);
          kept.gone();
        } else kept.nextAt = after + RETRY_MS;
      }
    } finally {
      this.sending = false;
    }
    this.schedule();
  }
}
