import { RedlockArgumentError, RedlockClosedError } from './errors/errors.js';
import type { AcquisitionHost } from './acquire/acquisition.js';
import type { LockCohorts } from './cohorts/lock-cohort.js';
import type { ContentionHints } from './rounds/arbiter-round.js';
import type { FairQueue } from './primitives/fair-queue.js';
import type { IndependenceWatch } from './safety/independence-watch.js';
import type { Lock, LockOperations } from './lock/lock.js';
import type { LockNode } from './nodes/lock-node.js';
import { checkDistinctNodes } from './nodes/node-input.js';
import { resolveRedlockOptions } from './options/redlock-option-checks.js';
import type { RedlockOptions, ResolvedRedlockOptions } from './options/options.js';
import type { RedisNodeInput } from './nodes/redis-client.js';
import type { KeyNames } from './nodes/cluster-client.js';
import type { ReleaseNotifier } from './wakeups/release-notifier.js';
import type { AddressedWakeups } from './wakeups/addressed-wakeups.js';
import type { LockContext } from './lock/lock-context.js';
import type { RestartRule } from './safety/restart-rule.js';
import { RedlockEmitter, type RedlockEventName } from './observability/events.js';
import { assembleRedlock } from './redlock-parts.js';
import { listenerWarning, RedlockTelemetry } from './observability/telemetry.js';

/*
 * What every Redlock is made of, apart from what it offers: the parts redlock-parts.ts wires
 * (held here as fields, read directly on the hot path), the constructor that wires them, and
 * the seams a subclass may replace (key names, the wait between attempts, onHeld). redlock.ts
 * extends it with the public operations, so that file reads as the library's API.
 */

/**
 * The state and subclass seams of a `Redlock`; construct a `Redlock`, never this. @internal
 */
export abstract class RedlockBase extends RedlockEmitter {
  /** Nodes needed for a majority: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  /** The options in force, defaults merged. */
  readonly options: ResolvedRedlockOptions;
  /** @internal */
  readonly nodes: readonly LockNode[];
  /** @internal */ readonly active = new Set<Lock>();
  /** @internal Attempts under way: close() lets them finish, so a lock they win is released, not leaked. */
  protected readonly attempting = new Set<Promise<unknown>>();
  /** @internal */ readonly contention: ContentionHints;
  /** @internal */ readonly ops: LockOperations;
  /** @internal */ protected readonly independence: IndependenceWatch;
  /** @internal Set by close(): every later operation rejects with RedlockClosedError. */
  protected closing: Promise<void> | undefined;
  /** Wakes waiters on release notices; opens no connection until something waits. */
  protected readonly releaseNotices: ReleaseNotifier;
  /** @internal Keeps restarted nodes out of quorums for the largest TTL in use (see restart-rule.ts). */
  readonly restarts: RestartRule | undefined;
  /** @internal FIFO queues of `fair: true` acquisitions (see fair-queue.ts). */
  readonly fair: FairQueue;
  /** @internal Events and spans of the lock operations, emitted to this instance's listeners. */
  protected readonly telemetry: RedlockTelemetry;
  /** @internal Key names: hash-tagged when a node is a Redis Cluster (see hash-slot.ts). */
  readonly keyNames: KeyNames;
  /** @internal Local hand-offs of plain locks (lock-cohort.ts); undefined with `cohort: false`. */
  readonly cohorts: LockCohorts | undefined;
  /** @internal Addressed wake-ups of plain locks: where this process queues for a key and is woken. */
  readonly wakeups: AddressedWakeups;
  /** @internal What the acquisitions of this instance read and call back (acquire/acquisition.ts). */
  protected readonly acquisitions: AcquisitionHost;
  /** @internal What every round of this instance reads (lock-context.ts): attempts get this, never the Redlock. */
  readonly context: LockContext;

  constructor(nodes: ReadonlyArray<RedisNodeInput>, options?: RedlockOptions) {
    super();
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new RedlockArgumentError(
        'Redlock needs at least one Redis node: new Redlock(["redis://host:6379", ...]). Use 1 node for an efficiency lock, 3 or 5 independent nodes for fault tolerance.',
      );
    }
    this.options = resolveRedlockOptions(options);
    checkDistinctNodes(nodes);
    const parts = assembleRedlock(nodes, this.options, options, {
      sink: this.sink,
      // A subclass that replaces waitForRetry may not wait by notice: then no one can be seen waiting.
      // (The default is this class's: Redlock itself does not replace it.)
      byNotice: this.waitForRetry === RedlockBase.prototype.waitForRetry,
      active: this.active,
      attempting: this.attempting,
      closing: () => this.closing !== undefined,
      lockKey: (resource) => this.lockKey(resource),
      fenceKey: (resource) => this.fenceKey(resource),
      waitForRetry: (...args) => this.waitForRetry(...args),
      onHeld: (lock) => this.onHeld(lock),
    });
    ({ nodes: this.nodes, quorum: this.quorum, keyNames: this.keyNames, restarts: this.restarts, fair: this.fair } = parts);
    ({ wakeups: this.wakeups, contention: this.contention, independence: this.independence, ops: this.ops } = parts);
    ({ telemetry: this.telemetry, context: this.context, cohorts: this.cohorts, acquisitions: this.acquisitions } = parts);
    this.releaseNotices = parts.notices;
  }

  /** A throwing listener is reported through `onWarning`, like every other library warning. */
  protected override onListenerError(event: RedlockEventName, err: unknown): void {
    this.options.onWarning(listenerWarning(event, err));
  }

  /** Prefixed Redis key of a resource's lock. */
  protected lockKey(resource: string): string {
    return this.keyNames.lock(resource);
  }

  /** Prefixed Redis key of a resource's fencing counter. */
  protected fenceKey(resource: string): string {
    return this.keyNames.fence(resource);
  }

  /**
   * Waits before the next attempt: until a release of one of `keys` is published on any
   * node, or the fallback poll fires (`ms` at the head of the queue, longer behind it),
   * at most `maxMs`. `keys` is the same array across retries (the notifier relies on it).
   */
  protected async waitForRetry(
    keys: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    maxMs = Infinity,
    addressed = false,
    unattempted = false,
  ): Promise<void> {
    await this.releaseNotices.wait(keys, ms, signal, maxMs, addressed, unattempted);
  }

  /** @internal Rejects every operation once close() was called. */
  protected assertOpen(): void {
    if (this.closing) throw new RedlockClosedError();
  }

  /** @internal Each lock this instance wins, when it wins it (the testing module follows them). */
  protected onHeld(_lock: Lock): void {}
}
