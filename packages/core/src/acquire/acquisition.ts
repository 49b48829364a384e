import { runAcquireLoop } from './acquire-loop.js';
import { attemptMutex } from './mutex-attempt.js';
import { cohortId, type LockCohorts } from '../cohorts/lock-cohort.js';
import { Lock } from '../lock/lock.js';
import type { LockContext } from '../lock/lock-context.js';
import { newOwnerToken } from '../lock/owner-token.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { AcquireProbe } from '../observability/telemetry.js';
import type { AcquireOptions, ResolvedRetry } from '../options/options.js';
import type { FairSession } from '../primitives/fair-session.js';
import { attemptPrimitive, type PrimitiveKind } from '../primitives/primitive-attempt.js';
import type { AttemptFailure } from '../rounds/attempt-failure.js';
import type { QueueFollowUp } from '../scripts/acquire.js';
import type { AddressedWakeups } from '../wakeups/addressed-wakeups.js';
import type { ReleaseNotifier } from '../wakeups/release-notifier.js';

/**
 * What the acquisitions of one Redlock read, and the hooks they call back: its round context, its
 * wake-ups, and the waits and key names a subclass may replace (the testing module's in-memory
 * Redlock follows every lock won through `onHeld`). @internal
 */
export interface AcquisitionHost {
  readonly context: LockContext;
  readonly notices: ReleaseNotifier;
  readonly wakeups: AddressedWakeups;
  readonly cohorts: LockCohorts | undefined;
  /** Attempts under way: close() lets them finish, so a lock they win is released, not leaked. */
  readonly attempting: Set<Promise<unknown>>;
  readonly closing: () => boolean;
  readonly lockKey: (resource: string) => string;
  readonly fenceKey: (resource: string) => string;
  readonly waitForRetry: (
    keys: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    maxMs: number,
    addressed: boolean,
    unattempted: boolean,
  ) => Promise<void>;
  readonly onHeld: (lock: Lock) => void;
}

/** One acquisition's arguments, already validated. @internal */
export interface AcquisitionSpec {
  readonly resources: readonly string[];
  readonly ttlMs: number;
  readonly opts: AcquireOptions;
  readonly retry: ResolvedRetry | false;
  readonly probe: AcquireProbe | undefined;
  /** A read-write lock or semaphore (primitive-kind.ts); undefined for a plain lock. */
  readonly kind?: PrimitiveKind | undefined;
}

/**
 * The attempts of one acquisition (acquire-loop.ts) and what each attempt sends: a primitive's
 * attempt, a fair waiter's take, or a plain lock's attempt, arbitrated under contention and
 * queued on the key's arbiter (addressed wake-ups) when it may wait. A plain lock of this process
 * is handed over locally first when a cohort holds it (lock-cohort.ts).
 * @internal
 */
export function acquireLoop(host: AcquisitionHost, spec: AcquisitionSpec, fair?: FairSession): Promise<Lock> {
  const { resources, ttlMs, opts, retry, probe, kind } = spec;
  const keys = kind?.waitKeys ?? resources.map((r) => host.lockKey(r));
  const fenceKeys = opts.fencing ? resources.map((r) => host.fenceKey(r)) : undefined;
  const token = newOwnerToken();
  // Nodes where an earlier attempt of this acquisition (same token) may have left our key (see MutexAttempt.mayHold).
  const mayHold = new Set<LockNode>();
  const signal = opts.signal;
  // Cohorts are for plain locks: a fair lock's order lives on the nodes, a primitive is not one owner.
  const cohorts = kind || fair ? undefined : host.cohorts;
  const notices = host.notices;
  // Addressed wake-ups: a plain lock of one resource queues its process on the key's arbiter.
  // Only an acquisition that may wait queues (tryAcquire does not).
  const mayWait = retry !== false && (retry.retries > 0 || opts.timeoutMs !== undefined);
  const wakeups = host.wakeups;
  const followUp = wakeups.queue && mayWait && !kind && !fair && keys.length === 1 ? wakeups.followUp(keys[0]!) : undefined;
  const plain = { host, resources, keys, fenceKeys, token, ttlMs };
  const acquired = runAcquireLoop({
    resources,
    opts,
    retry,
    probe,
    quorum: host.context.quorum,
    cohort: cohorts
      ? { cohorts, id: cohortId(keys), spec: { resources, keys, ttlMs, fencing: fenceKeys !== undefined, fenceKeys } }
      : undefined,
    closing: host.closing,
    queued: () => followUp !== undefined && notices.places.queued(keys[0]!),
    wait: (ms, maxMs, unattempted) =>
      fair ? fair.wait(ms, signal, maxMs) : host.waitForRetry(keys, ms, signal, maxMs, followUp !== undefined, unattempted === true),
    attempt: (attempt) => {
      const turn = followUp !== undefined && notices.lastTurn(keys);
      // A fair waiter attempts when the queue says so: no arbiter needed (nor wanted: the queue's round starts at node 0).
      const pending = kind
        ? attemptPrimitive(host.context, kind, token, ttlMs)
        : fair
          ? attemptPlain(plain, false, undefined, fair.sender(keys[0]!, fenceKeys?.[0], token, ttlMs))
          : // Every third attempt asks all nodes: an arbiter that missed a release (a minority node
            // keeping a stale key until its TTL) must not block waiters that a majority would grant.
            // Nor does an attempt on this process' turn: the arbiter just woke it, and no other waits on it.
            attemptPlain(
              plain,
              attempt % 3 !== 0 && (attempt > 1 || notices.contended(keys[0]!)) && !turn,
              mayHold,
              undefined,
              followUp,
            ).then((result) => {
              // Lost on its turn: the holder's release on the other nodes may still have been on its
              // way (the arbiter's came first). One more attempt at once; then it waits for its turn.
              if (turn && !(result instanceof Lock)) notices.places.noteFree(keys[0]!);
              return result;
            });
      host.attempting.add(pending);
      return pending.finally(() => host.attempting.delete(pending));
    },
  });
  // Given up (timed out, aborted, refused): its process leaves the queue unless another acquisition waits there.
  if (!followUp) return acquired;
  return acquired.catch(async (err: unknown) => {
    followUp.end();
    await wakeups.leave(keys[0]!);
    throw err;
  });
}

/** What every attempt of one plain lock's acquisition sends. */
interface PlainAttempt {
  readonly host: AcquisitionHost;
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly fenceKeys: readonly string[] | undefined;
  readonly token: string;
  readonly ttlMs: number;
}

/** One attempt of a plain lock (mutex-attempt.ts); `send` replaces the acquire script (a fair waiter's). */
async function attemptPlain(
  a: PlainAttempt,
  contended: boolean,
  mayHold: Set<LockNode> | undefined,
  send?: (node: LockNode) => Promise<unknown>,
  followUp?: QueueFollowUp,
): Promise<Lock | AttemptFailure> {
  const { host, keys } = a;
  const context = host.context;
  const result = await attemptMutex(context, {
    resources: a.resources,
    keys,
    fenceKeys: a.fenceKeys,
    token: a.token,
    ttlMs: a.ttlMs,
    arbiterKey: contended ? keys[0] : undefined,
    contention: context.contention,
    mayHold,
    send,
    ...(followUp ? { queue: { arbiter: host.wakeups.node(keys[0]!, context.nodeTimeout(a.ttlMs)), followUp } } : {}),
  });
  if (result instanceof Lock) {
    if (followUp) host.notices.places.noteWon(keys[0]!);
    host.onHeld(result);
  }
  return result;
}
