/**
 * Waits `ms`, or until `signal` aborts (rejecting with its reason). The timer is
 * cleared and the listener removed either way, so nothing outlives the wait.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A retry delay: `base` plus up to `jitter` ms of randomness, so waiters never phase-lock. */
export function jittered(baseMs: number, jitterMs: number): number {
  return baseMs + Math.random() * jitterMs;
}
