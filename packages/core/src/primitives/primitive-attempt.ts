import type { AttemptFailure } from '../rounds/attempt-failure.js';
import { FenceCatchUp } from '../fencing/fencing.js';
import { settleGrant } from '../fencing/grant-settle.js';
import { Lock, type LockOperations } from '../lock/lock.js';
import type { LockContext } from '../lock/lock-context.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import { labelLock, type PrimitiveLabel } from './primitive-label.js';
import { runRound, type ParsedReply, type RoundOptions, type RoundResult } from '../rounds/round.js';
import { acquireRound, stoppedAtArbiter, type ContentionHints } from '../rounds/arbiter-round.js';

/** One attempt of a primitive: what is sent to each node and how the round is read. @internal */
export interface PrimitiveAttempt {
  /**
   * The owner value this attempt writes, when it is not the acquisition's: a semaphore draws one
   * per attempt, so a failed attempt's late frees can never delete a retry's grant (see semaphore.ts).
   */
  readonly token?: string;
  send(node: LockNode): Promise<unknown>;
  /**
   * Under contention: the key whose arbiter node is asked first (with `send`), and the command
   * the other nodes then get for what it granted (see arbitratedRound). Undefined: every node at once.
   */
  readonly arbiter?: {
    readonly key: string;
    readonly hints: ContentionHints;
    follow(granted: readonly string[] | undefined): (node: LockNode) => Promise<unknown>;
  };
  parse(reply: unknown): ParsedReply<string[]>;
  /** A node that answered after the round resolved (a semaphore frees a slot it does not keep). */
  late?(index: number, outcome: NodeOutcome, value: readonly string[] | undefined): void;
  /** Replaces the round's early rule: resolve once this says the outcome is certain (a semaphore's slot vote). */
  decided?(index: number, outcome: NodeOutcome, value: readonly string[] | undefined): boolean;
  /** The round as the lock counts it (a semaphore: only the nodes that granted the slot it keeps). */
  settle?(round: RoundResult<string[]>): RoundResult<string[]>;
  /** The Redis keys of the lock won (known once the round settled). */
  lockKeys(): readonly string[];
  /**
   * Undoes what a failed attempt may have set. Settles at once on plain nodes (they apply a
   * connection's commands in order), after the releases on Redis Cluster nodes (see releasePartialHolds).
   */
  releasePartial(outcomes: readonly NodeOutcome[]): Promise<void>;
  /** Cleans up after a won attempt (a writer leaves the waiting writers where it had to wait). */
  won?(outcomes: readonly NodeOutcome[]): void;
}

/** A read lock, a write lock or a semaphore permit on one resource. @internal */
export interface PrimitiveKind {
  /** For events, spans and messages: 'read', 'write' or 'semaphore'. */
  readonly label: PrimitiveLabel;
  readonly resources: readonly string[];
  /** The channels a waiter listens on for release notices (stable across retries). */
  readonly waitKeys: readonly string[];
  readonly fenceKeys: readonly string[] | undefined;
  /** The operations a lock of this kind delegates to. */
  readonly ops: LockOperations;
  start(token: string, ttlMs: number): PrimitiveAttempt;
  /** Told of the acquisition's outcome (a writer that gave up stops blocking new readers). */
  watch?(acquisition: Promise<Lock>): void;
  /** Called with each lock of this kind once made (a read lock registers its scripts). */
  adopt?(lock: Lock): void;
}

/**
 * One attempt of a primitive: the same steps as a mutex attempt in redlock.ts (restart-rule
 * gate, early quorum, fencing settle and catch-up, validity minus drift, partial holds
 * undone), with the per-node command and the reading of the round taken from `kind`.
 * @internal
 */
export async function attemptPrimitive(
  host: LockContext,
  kind: PrimitiveKind,
  token: string,
  ttlMs: number,
): Promise<Lock | AttemptFailure> {
  const start = performance.now();
  const timeoutMs = host.nodeTimeout(ttlMs);
  const attempt = kind.start(token, ttlMs);
  const fenceKeys = kind.fenceKeys;
  const catchUp = fenceKeys ? new FenceCatchUp(host.nodes, fenceKeys) : undefined;
  host.restarts?.noteTtl(ttlMs);
  const late = (index: number, outcome: NodeOutcome, value: string[] | undefined): void => {
    attempt.late?.(index, outcome, value);
    catchUp?.late(index, outcome, value);
  };
  const send = (node: LockNode): Promise<unknown> => host.counted(node, attempt.send(node));
  const parse = (reply: unknown): ParsedReply<string[]> => attempt.parse(reply);
  const options: RoundOptions<string[]> = {
    quorum: host.quorum,
    timeoutMs,
    early: attempt.decided === undefined,
    late,
    ...(attempt.decided ? { decided: attempt.decided.bind(attempt) } : {}),
  };
  const arbiter = attempt.arbiter;
  const raw = arbiter
    ? await acquireRound(host.nodes, send, parse, options, arbiter.key, arbiter.hints, (granted) => {
        const follow = arbiter.follow(granted);
        return (node) => host.counted(node, follow(node));
      })
    : await runRound(host.nodes, send, parse, options);
  const round = attempt.settle ? attempt.settle(raw) : raw;
  const { failure, fencingTokens, expiresAtMono } = await settleGrant(
    host,
    round,
    fenceKeys && catchUp ? { resources: kind.resources, keys: fenceKeys, catchUp } : undefined,
    { start, ttlMs, timeoutMs },
    `${kind.label} lock`,
  );
  if (failure) {
    // Lost at the arbiter: nothing was sent elsewhere, and the arbiter refused.
    if (!stoppedAtArbiter(raw)) await attempt.releasePartial(round.outcomes);
    return failure;
  }
  attempt.won?.(round.outcomes);
  const lock = new Lock(
    {
      resources: kind.resources,
      keys: attempt.lockKeys(),
      value: attempt.token ?? token,
      expiresAtMono,
      nodes: round.outcomes,
      ...(fencingTokens ? { fencingTokens } : {}),
    },
    kind.ops,
  );
  kind.adopt?.(lock);
  labelLock(lock, kind.label);
  host.active.add(lock);
  return lock;
}
