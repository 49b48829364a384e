import type { AcquisitionHost } from './acquire/acquisition.js';
import { newCohorts } from './cohorts/cohort-rounds.js';
import type { LockCohorts } from './cohorts/lock-cohort.js';
import type { LockLostError } from './errors/errors.js';
import { fenceHeldLock, type FencingContext } from './fencing/fencing.js';
import type { Lock, LockOperations } from './lock/lock.js';
import { createLockContext, type LockContext } from './lock/lock-context.js';
import { extendLock, releaseToNodes, type LockRoundsHost } from './acquire/lock-rounds.js';
import { newOwnerToken } from './lock/owner-token.js';
import { keyNamesFor, nodeHandle, type KeyNames } from './nodes/cluster-client.js';
import { LockNode } from './nodes/lock-node.js';
import type { RedisNodeInput } from './nodes/redis-client.js';
import { enableReplicaSync } from './nodes/replica-sync.js';
import type { EventSink } from './observability/events.js';
import { RedlockTelemetry } from './observability/telemetry.js';
import { DEFAULT_RETRY, type RedlockOptions, type ResolvedRedlockOptions } from './options/options.js';
import { FairQueue } from './primitives/fair-queue.js';
import { readPhaseChannels } from './primitives/read-write-lock.js';
import { arbiterOf, contentionHints, type ContentionHints } from './rounds/arbiter-round.js';
import { IndependenceWatch } from './safety/independence-watch.js';
import { RestartRule } from './safety/restart-rule.js';
import { passTurnOnNode, type WakeQueue } from './scripts/wake-queue.js';
import { AddressedWakeups } from './wakeups/addressed-wakeups.js';
import { ReleaseNotifier } from './wakeups/release-notifier.js';

/**
 * What the façade gives its parts: where events go, the sets it keeps, and the methods a
 * subclass may replace (waits, key names, the testing module's `onHeld`). @internal
 */
export interface RedlockHooks extends Pick<AcquisitionHost, 'closing' | 'lockKey' | 'fenceKey' | 'waitForRetry' | 'onHeld'> {
  readonly sink: EventSink;
  /** Whether waits go through the release notices (no subclass replaced waitForRetry): only then can waiters queue. */
  readonly byNotice: boolean;
  readonly active: Set<Lock>;
  readonly attempting: Set<Promise<unknown>>;
}

/** The parts of one Redlock, wired together once. @internal */
export interface RedlockParts {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
  readonly keyNames: KeyNames;
  readonly restarts: RestartRule | undefined;
  readonly notices: ReleaseNotifier;
  readonly fair: FairQueue;
  readonly wakeups: AddressedWakeups;
  readonly contention: ContentionHints;
  readonly independence: IndependenceWatch;
  readonly telemetry: RedlockTelemetry;
  readonly ops: LockOperations;
  readonly context: LockContext;
  readonly cohorts: LockCohorts | undefined;
  readonly acquisitions: AcquisitionHost;
}

/** One LockNode per entry; on a bad entry, the nodes made so far are closed before the error goes on. */
function createNodes(inputs: ReadonlyArray<RedisNodeInput>, options: ResolvedRedlockOptions, given: RedlockOptions | undefined) {
  const created: LockNode[] = [];
  try {
    for (let i = 0; i < inputs.length; i++) {
      created.push(new LockNode(nodeHandle(inputs[i], i, options.nodeTimeoutMs, options.onWarning), options.onWarning));
    }
    const keyNames = keyNamesFor(options.keyPrefix, created);
    enableReplicaSync(created, given?.replicaSync, options.nodeTimeoutMs);
    return { nodes: created, keyNames };
  } catch (err) {
    for (const node of created) void node.close();
    throw err;
  }
}

/** Where this process queues for a key and is woken (addressed wake-ups); none on Redis Cluster nodes or without notices. */
function wakeQueueOf(keyNames: KeyNames, options: ResolvedRedlockOptions, byNotice: boolean): WakeQueue | undefined {
  if (!byNotice || keyNames.tagged) return undefined;
  const lockPrefix = keyNames.lock('');
  return {
    id: newOwnerToken().slice(0, 16),
    prefix: `${options.keyPrefix}wake:`,
    waitersKey: (lockKey) => keyNames.key('waiters', lockKey.slice(lockPrefix.length)),
  };
}

/**
 * Wires one Redlock's parts: nodes, the restart rule, release notices and addressed wake-ups,
 * fair queues, cohorts, the round context every attempt reads, and the operations a `Lock` calls.
 * @internal
 */
export function assembleRedlock(
  inputs: ReadonlyArray<RedisNodeInput>,
  options: ResolvedRedlockOptions,
  given: RedlockOptions | undefined,
  hooks: RedlockHooks,
): RedlockParts {
  const { nodes, keyNames } = createNodes(inputs, options, given);
  const quorum = Math.floor(nodes.length / 2) + 1;
  const rule = options.restartRule;
  const restarts = rule
    ? new RestartRule(nodes, {
        keyPrefix: options.keyPrefix,
        maxTtlMs: rule.maxTtlMs,
        declaredTtlMs: rule.declaredTtlMs,
        // A young node's verdict waits this long at most for the other nodes' first INFO.
        firstLookMs: options.nodeTimeoutMs,
        onWarning: options.onWarning,
      })
    : undefined;
  const queue = wakeQueueOf(keyNames, options, hooks.byNotice);
  // Linger past one attempt (acquire round + release of partial holds + fencing round),
  // so a retrying waiter finds its channel still subscribed.
  const notices = new ReleaseNotifier(
    nodes.map((node) => node.client),
    {
      quorum,
      lingerMs: 3 * options.nodeTimeoutMs + 100,
      arbiterOf: (key) => arbiterOf(nodes, key, Infinity),
      isDown: (node) => nodes[node]!.connection.isDown,
      wakesAll: readPhaseChannels(options.keyPrefix),
      ...(queue
        ? {
            addressed: {
              channel: queue.prefix + queue.id,
              queuedPollMs: DEFAULT_RETRY.delayMs,
              pass: (node: number, key: string) => void passTurnOnNode(nodes[node]!, queue, key).catch(() => undefined),
            },
          }
        : {}),
    },
  );
  const contention = contentionHints(() => ({ restarts, notices }));
  const fair = new FairQueue(nodes, quorum, options, keyNames);
  const wakeups = new AddressedWakeups(queue, {
    nodes,
    notices,
    nodeTimeoutMs: options.nodeTimeoutMs,
    onWarning: options.onWarning,
    usable: contention.usable,
  });
  const telemetry = new RedlockTelemetry(hooks.sink, { nodeCount: nodes.length, quorum, tracing: options.tracing });
  // The operations close over what is made after them (a Lock only calls them once acquired).
  const late: { context?: LockContext; cohorts?: LockCohorts | undefined; rounds?: LockRoundsHost } = {};
  // A Lock that handed its keys over must never reach them again (its token is the new holder's).
  const stale = (lock: Lock): LockLostError | undefined => late.cohorts?.refuse(lock);
  const fencing = (): FencingContext => ({
    ...late.context!.fencingContext(options.nodeTimeoutMs),
    counted: (n, sent) => late.context!.counted(n, sent),
  });
  const ops: LockOperations = {
    extend: (lock, ttlMs) => {
      const refused = stale(lock);
      return refused ? Promise.reject(refused) : telemetry.observeExtend(lock, ttlMs, () => extendLock(late.rounds!, lock, ttlMs));
    },
    release: (lock) =>
      telemetry.observeRelease(lock, () =>
        late.cohorts
          ? late.cohorts.release(lock, (yieldTo, waiting) => releaseToNodes(late.rounds!, lock, yieldTo, waiting))
          : releaseToNodes(late.rounds!, lock, 0, 0),
      ),
    fence: (lock) => {
      const refused = stale(lock);
      const fenceKeys = lock.resources.map((r) => hooks.fenceKey(r));
      return refused ? Promise.reject(refused) : fenceHeldLock(fencing(), lock, fenceKeys);
    },
    lost: (lock, error) => {
      // A handed-off Lock's late extension says nothing about its successor.
      if (stale(lock)) return;
      // No longer held: not counted, and not kept alive by us if its owner never releases it.
      hooks.active.delete(lock);
      late.cohorts?.lost(lock);
      telemetry.observeLost(lock, error);
    },
  };
  const context = createLockContext({
    nodes,
    quorum,
    options,
    keyNames,
    restarts,
    active: hooks.active,
    ops,
    contention,
    contended: (key) => notices.contended(key),
  });
  const made = options.cohort ? newCohorts(context, options.cohort, fencing, notices, hooks.byNotice, () => wakeups.queue) : undefined;
  Object.assign(late, { context, cohorts: made, rounds: { context, notices, wakeups, fair } });
  if (made) notices.turnDelay = (key) => made.turnDelay(key);
  const { closing, lockKey, fenceKey, waitForRetry, onHeld, attempting } = hooks;
  return {
    nodes,
    quorum,
    keyNames,
    restarts,
    notices,
    fair,
    wakeups,
    contention,
    independence: new IndependenceWatch(nodes, options.nodeTimeoutMs * 4),
    telemetry,
    ops,
    context,
    cohorts: made,
    acquisitions: { context, notices, wakeups, cohorts: made, attempting, closing, lockKey, fenceKey, waitForRetry, onHeld },
  };
}
