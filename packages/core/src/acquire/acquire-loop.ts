import { LockNotAcquiredError, QuorumUnavailableError, RedlockClosedError } from '../errors/errors.js';
import type { AttemptFailure } from '../rounds/attempt-failure.js';
import { Lock } from '../lock/lock.js';
import type { CohortWaiterSpec, LockCohorts } from '../cohorts/lock-cohort.js';
import type { AcquireOptions, ResolvedRetry } from '../options/options.js';
import type { AcquireProbe } from '../observability/telemetry.js';
import { jittered } from '../lock/wait.js';

/** One acquisition's attempts as the Redlock runs them, arguments already validated. @internal */
export interface AcquireLoop {
  readonly resources: readonly string[];
  readonly opts: AcquireOptions;
  readonly retry: ResolvedRetry | false;
  readonly probe: AcquireProbe | undefined;
  readonly quorum: number;
  /** One attempt on the nodes (attempt numbers start at 1). */
  attempt(attempt: number): Promise<Lock | AttemptFailure>;
  /**
   * Waits before the next attempt: a release notice (or a fair queue's turn), or the fallback poll.
   * `unattempted`: no attempt preceded this wait, so no release can have slipped in between.
   */
  wait(ms: number, maxMs: number, unattempted?: boolean): Promise<unknown>;
  /** Whether the Redlock began closing. */
  closing(): boolean;
  /** Whether this process is queued for the lock's release already (addressed wake-ups): a new acquisition waits for its turn. */
  queued?(): boolean;
  /** The acquisition's place among the cohorts (a plain, non-fair lock with cohorting on), else undefined. */
  readonly cohort: { readonly cohorts: LockCohorts; readonly id: string; readonly spec: CohortWaiterSpec } | undefined;
}

/**
 * The attempts of one acquisition: on the nodes, retried with jitter after a release notice or
 * the fallback poll, until the retries or the deadline are spent. While a lock of the same
 * Redlock holds exactly these keys, the acquisition waits for its hand-off instead and sends
 * nothing (lock-cohort.ts); each such wait counts as one attempt, and the last attempt always
 * goes to the nodes, so the errors carry what the nodes answered.
 * @internal
 */
export async function runAcquireLoop(loop: AcquireLoop): Promise<Lock> {
  const { resources, opts, retry, probe, cohort } = loop;
  const timeoutMs = opts.timeoutMs ?? Infinity;
  const started = performance.now();
  const deadline = started + timeoutMs;
  const maxRetries = retry === false ? 0 : opts.timeoutMs !== undefined && opts.retry === undefined ? Infinity : retry.retries;
  const signal = opts.signal;

  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    if (loop.closing()) throw new RedlockClosedError();
    const left = deadline - performance.now();
    if (cohort && retry !== false && attempt === 1 && maxRetries > 0 && left >= 1 && cohort.cohorts.defers(cohort.id)) {
      // This instance just gave the lock to other processes: a new acquisition lets them go first.
      await loop.wait(jittered(retry.delayMs, retry.jitterMs), left);
    } else if (retry !== false && attempt === 1 && maxRetries > 0 && left >= 1 && loop.queued?.() === true) {
      // Other processes queued before this one: attempting now would race them for their turn.
      await loop.wait(jittered(retry.delayMs, retry.jitterMs), left, true);
    }
    if (cohort && retry !== false && attempt <= maxRetries && left >= 1 && cohort.cohorts.holds(cohort.id)) {
      // Held by this instance: our attempt could only fail. With an unbounded retry budget no timer is needed.
      const budget = maxRetries === Infinity ? left : Math.min(jittered(retry.delayMs, retry.jitterMs), left);
      probe?.wait(attempt, budget, [], undefined);
      const outcome = await cohort.cohorts.wait(cohort.id, cohort.spec, budget, signal);
      probe?.resumed();
      if (outcome instanceof Lock) {
        if (signal?.aborted) {
          await outcome.release();
          throw signal.reason;
        }
        probe?.acquired(attempt, outcome.acquireNodes, true);
        return outcome;
      }
      if (outcome === 'timeout') continue;
      // The cohort gave way to other processes: let them take their turn before attempting.
      if (outcome === 'yield') await loop.wait(jittered(retry.delayMs, retry.jitterMs), deadline - performance.now());
    }
    const result = await loop.attempt(attempt);
    if (result instanceof Lock) {
      // close() began meanwhile: it releases this lock (it is among the active ones).
      if (loop.closing()) throw new RedlockClosedError();
      if (signal?.aborted) {
        await result.release();
        throw signal.reason;
      }
      cohort?.cohorts.adopt(result);
      probe?.acquired(attempt, result.acquireNodes);
      return result;
    }
    // The last attempt ran at the deadline (< 1 ms left: a timer fired a hair early). Nodes
    // that may only be slow are retried like a held lock; refused connections fail at once.
    const leftNow = deadline - performance.now();
    const spent = attempt > maxRetries || leftNow < 1;
    // Nodes in their restart window count again at a known time: waited out when the acquisition lasts that long.
    const windowMs = result.kind === 'unavailable' && result.retryAfterMs ? result.retryAfterMs : undefined;
    const outlasts =
      windowMs !== undefined &&
      retry !== false &&
      windowMs < (opts.timeoutMs !== undefined ? leftNow : (maxRetries - attempt) * (retry.delayMs + retry.jitterMs));
    if (result.kind === 'unavailable' && (!result.transient || spent || (windowMs !== undefined && !outlasts))) {
      throw new QuorumUnavailableError({
        resources,
        attempts: attempt,
        nodes: result.nodes,
        quorum: loop.quorum,
        ...(result.reason ? { reason: result.reason } : {}),
        ...(windowMs === undefined ? {} : { retryAfterMs: windowMs }),
      });
    }
    if (windowMs !== undefined) {
      probe?.wait(attempt, windowMs, result.nodes, windowMs);
      // Notices cannot end the window: a wait that returns early for one is resumed.
      const windowEnd = performance.now() + windowMs;
      for (let left = windowMs; left >= 1 && !loop.closing(); left = windowEnd - performance.now()) {
        await loop.wait(left, deadline - performance.now(), true);
      }
      probe?.resumed();
      continue;
    }
    const retryAfterMs = result.kind === 'held' ? result.retryAfterMs : undefined;
    if (spent || retry === false) {
      throw new LockNotAcquiredError({
        resources,
        attempts: attempt,
        nodes: result.nodes,
        retryAfterMs,
        waitedMs: performance.now() - started,
        // A full semaphore is told apart from a held lock (the HTTP answer names the permits).
        ...(opts.permits !== undefined ? { permits: opts.permits } : {}),
      });
    }
    // Held by this instance now (a local waiter won): wait for its hand-off, not for a notice.
    if (attempt + 1 <= maxRetries && cohort?.cohorts.holds(cohort.id)) continue;
    // A deadline, not a budget of whole delays: wait out what is left (a notice may come).
    const wait = jittered(retry.delayMs, retry.jitterMs);
    probe?.wait(attempt, Math.min(wait, leftNow), result.nodes, retryAfterMs);
    await loop.wait(wait, leftNow);
    probe?.resumed();
  }
}
