/** What one signal's single 'abort' listener calls: the callbacks of everyone waiting on it. */
interface AbortFanOut {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

const fanOuts = new WeakMap<AbortSignal, AbortFanOut>();

/**
 * Calls `callback` once when `signal` aborts; returns the function that cancels that.
 * One app-wide signal shared by thousands of waiters gets ONE 'abort' listener (one per
 * wait would print MaxListenersExceededWarning past 10), removed when the last waiter
 * cancels, so nothing stays attached to a long-lived signal.
 *
 * @example
 * ```ts
 * const stop = onAbort(signal, () => reject(signal.reason));
 * try { await work(); } finally { stop(); }
 * ```
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let fanOut = fanOuts.get(signal);
  if (!fanOut) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      fanOuts.delete(signal);
      for (const notify of callbacks) notify();
      callbacks.clear();
    };
    fanOut = { callbacks, listener };
    fanOuts.set(signal, fanOut);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = fanOut;
  // A wrapper per registration: the same function registered twice is two waiters.
  const entry = (): void => callback();
  callbacks.add(entry);
  return () => {
    if (!callbacks.delete(entry) || callbacks.size > 0) return;
    if (fanOuts.get(signal)?.callbacks === callbacks) fanOuts.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}

/**
 * Waits `ms`, or until `signal` aborts (rejecting with its reason). The timer is
 * cleared and the listener removed either way, so nothing outlives the wait.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const stop = signal
      ? onAbort(signal, () => {
          clearTimeout(timer);
          reject(signal.reason);
        })
      : undefined;
    const timer = setTimeout(() => {
      stop?.();
      resolve();
    }, ms);
  });
}

/** A retry delay: `base` plus up to `jitter` ms of randomness, so waiters never phase-lock. */
export function jittered(baseMs: number, jitterMs: number): number {
  return baseMs + Math.random() * jitterMs;
}
