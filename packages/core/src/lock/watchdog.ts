import { LockLostError } from '../errors/errors.js';
import type { Lock } from './lock.js';

/** Share of the TTL after which the watchdog extends: two thirds of it stay for slow round trips and retries. */
const EXTEND_AFTER_FRACTION = 1 / 3;
/** Pause between extension attempts while a quorum is unreachable. */
const UNAVAILABLE_RETRY_MS = 50;

/**
 * Keeps a lock alive while its holder works: extends it every `ttl/3`, counted from
 * when the lock was actually obtained (not from the first attempt), retries while
 * the quorum is briefly unreachable, and stops at `maxHoldMs`. Losing the lock
 * aborts `lock.signal`; nothing is thrown at the event loop, and no timer survives
 * `stop()` or the lock's release.
 */
export function startWatchdog(lock: Lock, ttlMs: number, maxHoldMs: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const holdDeadline = lock.acquiredAtMono + maxHoldMs;

  const schedule = (delayMs: number): void => {
    if (stopped) return;
    const untilCap = holdDeadline - performance.now();
    timer = setTimeout(tick, Math.max(0, Math.min(delayMs, untilCap)));
    timer.unref();
  };

  const tick = (): void => {
    timer = undefined;
    if (stopped || lock.lossError || lock.released) return;
    if (performance.now() >= holdDeadline) {
      lock.lose('max-hold-exceeded');
      return;
    }
    lock.extend(ttlMs).then(
      () => schedule(ttlMs * EXTEND_AFTER_FRACTION),
      (err: unknown) => {
        // Lost: extend() already aborted the signal. Unreachable quorum: the lock is
        // still valid until its expiration (whose timer aborts the signal), so try again.
        if (!(err instanceof LockLostError)) schedule(Math.min(UNAVAILABLE_RETRY_MS, lock.remainingMs / 4));
      },
    );
  };

  const stop = (): void => {
    stopped = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  lock.attachWatchdog(stop);
  schedule(Math.max(0, lock.remainingMs - ttlMs * (1 - EXTEND_AFTER_FRACTION)));
  return stop;
}

/**
 * Runs `routine` while holding `lock`: the watchdog extends it, it is released afterwards,
 * and if it was lost meanwhile the call rejects with the lock's `LockLostError` (also when
 * the routine completed: its exclusivity was not guaranteed throughout). This is the body of
 * `Redlock.using`, exported for lock engines that hand out core `Lock`s (the NestJS testing
 * module's in-memory one).
 *
 * @example
 * ```ts
 * const lock = await engine.acquire('job:7', 5_000);
 * await runWithLock(lock, 5_000, Infinity, async (l) => work(l.signal));
 * ```
 */
export async function runWithLock<T>(lock: Lock, ttlMs: number, maxHoldMs: number, routine: (lock: Lock) => Promise<T> | T): Promise<T> {
  const stop = startWatchdog(lock, ttlMs, maxHoldMs);
  let result: T;
  try {
    result = await routine(lock);
  } finally {
    stop();
    await lock.release();
  }
  // Not `lock.signal.aborted`: that would make the lock's AbortController on every call.
  const lost = lock.lossError;
  if (lost) throw lost;
  return result;
}
