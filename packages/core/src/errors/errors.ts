import { inspect } from 'node:util';
import { describeNodes, oneLine, quorumFix, waitHint, type WaitOption } from './error-hints.js';
import type { NodeOutcome } from './node-outcome.js';

export type { WaitOption } from './error-hints.js';

/**
 * Base class of every error this library throws. `name` is always the concrete
 * class name, so logs and `instanceof` checks agree.
 *
 * @example
 * ```ts
 * try {
 *   await redlock.acquire('order:42', 5_000);
 * } catch (err) {
 *   if (err instanceof LockNotAcquiredError) return reply.status(409);
 *   if (err instanceof QuorumUnavailableError) return reply.status(503);
 *   throw err;
 * }
 * ```
 */
export class RedlockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Details common to errors raised by an acquisition attempt. */
export interface AcquireFailureDetails {
  /** The resources that were requested (without key prefix). */
  readonly resources: readonly string[];
  /** How many attempts were made before giving up. */
  readonly attempts: number;
  /** What each node answered on the last attempt. Never contains owner tokens. */
  readonly nodes: readonly NodeOutcome[];
}

/**
 * The lock is held by someone else: enough nodes answered, but a majority of them
 * already held the resource for another owner. Retrying later can succeed.
 *
 * `retryAfterMs` estimates when enough of the holder's keys expire for a majority to be free
 * again, from the TTLs the nodes reported (undefined when unknown). An HTTP layer sends it as
 * `Retry-After`.
 */
export class LockNotAcquiredError extends RedlockError implements AcquireFailureDetails {
  readonly resources: readonly string[];
  readonly attempts: number;
  readonly nodes: readonly NodeOutcome[];
  /** Milliseconds until the current holder's lock expires, when known. */
  readonly retryAfterMs: number | undefined;
  /** How long the acquisition tried, from its start to giving up (ms), when known. */
  readonly waitedMs: number | undefined;
  /** The option the hint names (`timeoutMs` for the core, `wait` for the Nest decorators). */
  readonly waitOption: WaitOption;
  /**
   * The semaphore's number of permits when the acquisition asked for a permit (all of them were
   * in use), else undefined: an HTTP answer says "all 2 permits of export:acme are in use".
   */
  readonly permits: number | undefined;
  readonly #details: LockNotAcquiredDetails;

  constructor(details: LockNotAcquiredDetails) {
    const why =
      details.reason ?? (details.permits !== undefined ? `all ${details.permits} permits are in use` : 'it is held by another owner');
    const waitOption = details.waitOption ?? 'timeoutMs';
    super(
      `Could not lock ${JSON.stringify(details.resources)}: ${why} ` +
        `(${details.attempts} attempt(s); nodes: ${describeNodes(details.nodes)}). ` +
        waitHint(waitOption, details.waitedMs),
    );
    this.#details = details;
    this.resources = details.resources;
    this.attempts = details.attempts;
    this.nodes = details.nodes;
    this.retryAfterMs = details.retryAfterMs;
    this.waitedMs = details.waitedMs;
    this.waitOption = waitOption;
    this.permits = details.permits;
  }

  /**
   * The same failure, its hint naming `option`: the Nest layer names its `wait` option.
   * @internal
   */
  forWaitOption(option: WaitOption): LockNotAcquiredError {
    return option === this.waitOption ? this : new LockNotAcquiredError({ ...this.#details, waitOption: option });
  }

  /** One line in logs (see {@link QuorumUnavailableError}). */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** What a {@link LockNotAcquiredError} is built from. */
export interface LockNotAcquiredDetails extends AcquireFailureDetails {
  readonly retryAfterMs?: number | undefined;
  readonly reason?: string;
  /** From the start of the acquisition to giving up, in ms. */
  readonly waitedMs?: number;
  /** The option the hint tells the caller to raise. Default `'timeoutMs'` (the core's). */
  readonly waitOption?: WaitOption;
  /** A semaphore's number of permits, when a permit was asked for. */
  readonly permits?: number | undefined;
}

/**
 * Too many nodes failed or did not answer in time for a majority to be possible.
 * This is an infrastructure problem (Redis down, paused, unreachable, wrong password),
 * not contention: an HTTP layer maps it to 503.
 */
export class QuorumUnavailableError extends RedlockError implements AcquireFailureDetails {
  readonly resources: readonly string[];
  readonly attempts: number;
  readonly nodes: readonly NodeOutcome[];
  /** Nodes needed for a majority. */
  readonly quorum: number;
  /**
   * When a quorum can count again, in ms, when that is known: nodes that restarted without their
   * data sit out a known window (the restart rule) and it outlasted the acquisition's deadline.
   * An HTTP layer sends it as `Retry-After`.
   */
  readonly retryAfterMs: number | undefined;

  constructor(details: AcquireFailureDetails & { quorum: number; reason?: string; retryAfterMs?: number; cause?: unknown }) {
    const failed = details.nodes.filter((n) => n.status === 'error' || n.status === 'timeout').length;
    super(
      `Could not reach a quorum of ${details.quorum}/${details.nodes.length} Redis nodes for ` +
        `${JSON.stringify(details.resources)}: ${details.reason ?? `${failed} node(s) failed or timed out`} ` +
        `(nodes: ${describeNodes(details.nodes)}). ${quorumFix(details.nodes)}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.resources = details.resources;
    this.attempts = details.attempts;
    this.nodes = details.nodes;
    this.quorum = details.quorum;
    this.retryAfterMs = details.retryAfterMs;
  }

  /**
   * One line in logs: `QuorumUnavailableError: Could not reach a quorum … (nodes: a=error (ECONNREFUSED …), …). Check …`.
   * During an outage a failing job logs this line, not a stack and a dump of its fields.
   */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** Why a lock is known to be lost. */
export type LockLostReason =
  /** Its validity ran out before it was extended. */
  | 'expired'
  /** An extension found that a majority of nodes no longer hold our token. */
  | 'not-owner'
  /** The watchdog stopped extending because `maxHoldMs` was reached. */
  | 'max-hold-exceeded'
  /** The lock was released (or its Redlock closed) before this operation. */
  | 'released';

/**
 * The lock is no longer held: extending it failed, its validity ran out, or it was
 * already released. This is the `reason` of `lock.signal` when the signal aborts.
 */
export class LockLostError extends RedlockError {
  readonly resources: readonly string[];
  readonly reason: LockLostReason;
  readonly nodes: readonly NodeOutcome[];

  constructor(details: { resources: readonly string[]; reason: LockLostReason; nodes?: readonly NodeOutcome[]; cause?: unknown }) {
    const text: Record<LockLostReason, string> = {
      expired: 'its validity ran out before it was extended (use a longer ttl or using(), which auto-extends)',
      'not-owner': 'a majority of nodes no longer hold it (it expired and may now be held by someone else)',
      'max-hold-exceeded': 'it was held longer than maxHoldMs, so the watchdog stopped extending it',
      released: 'it was already released; acquire a new lock instead',
    };
    super(
      `Lock on ${JSON.stringify(details.resources)} is lost: ${text[details.reason]}.`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.resources = details.resources;
    this.reason = details.reason;
    this.nodes = details.nodes ?? [];
  }

  /** One line in logs (see {@link QuorumUnavailableError}). */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** An argument or option is invalid. The message names the offending value and the fix. */
export class RedlockArgumentError extends RedlockError {}

/** The `Redlock` instance was closed; create a new one. */
export class RedlockClosedError extends RedlockError {
  constructor() {
    super('This Redlock instance is closed. Create a new Redlock (closing is final).');
  }
}

/** The configured nodes are not independent masters (a replica, or the same server twice). */
export class NodeIndependenceError extends RedlockError {
  readonly problems: readonly string[];
  /**
   * True when two configured nodes are the same server (same `run_id`). That is always an
   * error, also where a replica is only warned about (the Nest module's `independenceCheck: 'warn'`).
   */
  readonly sameServer: boolean;

  constructor(problems: readonly string[], details: { sameServer?: boolean } = {}) {
    super(
      `Redlock nodes must be independent masters: ${problems.join('; ')}. ` +
        'Configure N separate Redis servers with no replication between them (no replicas, no Sentinel failover).',
    );
    this.problems = problems;
    this.sameServer = details.sameServer ?? false;
  }
}

/**
 * A write to a fenced resource carried a token lower than (or equal to) one the
 * resource has already seen: the writer's lock was lost and someone newer wrote.
 */
export class StaleFencingTokenError extends RedlockError {
  readonly resource: string;
  readonly token: bigint;
  readonly currentToken: bigint | undefined;

  constructor(details: { resource: string; token: bigint; currentToken?: bigint | undefined }) {
    super(
      `Rejected a write to "${details.resource}" with fencing token ${details.token}: ` +
        (details.currentToken === undefined
          ? 'a newer token has already written there'
          : `the resource has already seen token ${details.currentToken}`) +
        '. The lock was lost (paused or expired holder); do not retry this write with the old lock.',
    );
    this.resource = details.resource;
    this.token = details.token;
    this.currentToken = details.currentToken;
  }
}
