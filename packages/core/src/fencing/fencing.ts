/**
 * Fencing tokens across a Redlock quorum (see docs/fencing.md for why they are monotonic).
 *
 * A fencing round, after the nodes answered the increment (the acquire script, or the
 * owner-checked increment of `Lock.fence()`):
 * 1. settle: the token of a resource is the maximum counter over the granting nodes;
 * 2. write-back: before it is handed out, a majority of nodes must hold a counter ≥ the
 *    token; nodes that already returned exactly the token count towards it, so in the
 *    common case (all counters agree) no second round is needed;
 * 3. catch-up: every other node that incremented, also one that answered after the
 *    round resolved or whose reply was lost, is raised to the token in the background,
 *    so a node restarted empty is brought up to date by the next acquisition it grants.
 */
import { LockLostError, QuorumUnavailableError } from '../errors/errors.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { NodeOutcome, NodeStatus } from '../errors/node-outcome.js';
import { runRound, type RoundResult } from '../rounds/round.js';
import { fenceHeldOnNode, parseFenceHeldReply } from '../scripts/fence-held.js';
import { parseRaiseReply, raiseFenceOnNode } from '../scripts/fence-raise.js';

export interface SettledTokens {
  /** The token of each resource, in resource order. */
  readonly tokens: bigint[];
  /** The same, as decimal strings (what the write-back script takes). */
  readonly decimal: string[];
  /** How many granting nodes already hold every token (no write-back needed there). */
  readonly upToDate: number;
}

/** Computes tokens from the counters returned by the granting nodes. */
export function settleTokens(values: ReadonlyArray<readonly string[] | undefined>, resourceCount: number): SettledTokens {
  const tokens = new Array<bigint>(resourceCount).fill(0n);
  const granted: Array<readonly string[]> = [];
  for (const v of values) {
    if (v === undefined) continue;
    granted.push(v);
    for (let r = 0; r < resourceCount; r++) {
      const t = BigInt(v[r]!);
      if (t > tokens[r]!) tokens[r] = t;
    }
  }
  const decimal = tokens.map(String);
  let upToDate = 0;
  for (const v of granted) {
    if (v.every((s, r) => s === decimal[r])) upToDate++;
  }
  return { tokens, decimal, upToDate };
}

/**
 * Raises, in the background, every node that may have incremented a counter and is not
 * known to hold the issued token. Created before the increment round, whose `late`
 * callback it is: answers that arrive after the round resolved are handled the same way.
 *
 * Each raise is sent on the node's connection after the increment, and a node runs one
 * connection's commands in order, so it lands after the increment even when the node is
 * paused and the client already gave up on the reply (a client-side timeout).
 */
export class FenceCatchUp {
  private target: readonly string[] | undefined;
  /** Late answers seen before the token was known. */
  private early: Array<{ index: number; status: NodeStatus; value: readonly string[] | undefined }> = [];
  private readonly raised = new Set<number>();

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly fenceKeys: readonly string[],
  ) {}

  /** The round's `late` callback. */
  readonly late = (index: number, outcome: NodeOutcome, value: readonly string[] | undefined): void => {
    if (this.target) this.consider(index, outcome.status, value);
    else this.early.push({ index, status: outcome.status, value });
  };

  /**
   * The token is known: raise the nodes that answered in time with a lower counter, or
   * with an error (the increment may have landed), and from now on every late answer.
   * Nodes still `pending` or `timeout` are left to their late answer, which always comes
   * (a reply, the client's command timeout, or the connection's error).
   */
  raiseTo(target: readonly string[], round: RoundResult<string[]>): void {
    this.target = target;
    round.outcomes.forEach((o, i) => {
      if (o.status !== 'pending' && o.status !== 'timeout') this.consider(i, o.status, round.values[i]);
    });
    const early = this.early;
    this.early = [];
    for (const e of early) this.consider(e.index, e.status, e.value);
  }

  /** The write-back round reached every node already: nothing is left to raise. */
  done(): void {
    this.target = [];
    this.early = [];
    for (let i = 0; i < this.nodes.length; i++) this.raised.add(i);
  }

  private consider(index: number, status: NodeStatus, value: readonly string[] | undefined): void {
    // 'held' (acquire) and 'absent' (fence) nodes ran no increment.
    if (status === 'held' || status === 'absent' || this.raised.has(index)) return;
    const target = this.target!;
    if (status === 'ok' && value?.every((s, r) => s === target[r])) return;
    this.raised.add(index);
    raiseFenceOnNode(this.nodes[index]!, this.fenceKeys, target).catch(() => undefined);
  }
}

/** What a fencing round needs of its Redlock. */
export interface FencingContext {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
  /** Per-node timeout of the write-back round. */
  readonly timeoutMs: number;
  /** Filters a node's grant (the restart rule: a restarted node's counter is not trusted). */
  readonly counted?: (node: LockNode, sent: Promise<unknown>) => Promise<unknown>;
}

/** The tokens, or why they cannot be handed out. */
export type FencingResult =
  | { readonly ok: true; readonly tokens: ReadonlyMap<string, bigint> }
  | { readonly ok: false; readonly nodes: NodeOutcome[]; readonly reason: string };

/**
 * Settles the tokens of an increment round that reached a quorum, writes them back when
 * fewer than a majority already hold them, and starts the catch-up of the other nodes.
 */
export async function settleFencing(
  ctx: FencingContext,
  round: RoundResult<string[]>,
  resources: readonly string[],
  fenceKeys: readonly string[],
  catchUp: FenceCatchUp,
): Promise<FencingResult> {
  const settled = settleTokens(round.values, resources.length);
  if (settled.upToDate < ctx.quorum) {
    // Sent to every node, so it also covers the nodes the increment round did not wait for.
    catchUp.done();
    const raise = await runRound(ctx.nodes, (node) => raiseFenceOnNode(node, fenceKeys, settled.decimal), parseRaiseReply, {
      quorum: ctx.quorum,
      timeoutMs: ctx.timeoutMs,
      early: true,
    });
    if (raise.ok < ctx.quorum) {
      return { ok: false, nodes: raise.outcomes, reason: 'the fencing write-back did not reach a quorum' };
    }
  } else {
    catchUp.raiseTo(settled.decimal, round);
  }
  return { ok: true, tokens: new Map(resources.map((r, i) => [r, settled.tokens[i]!])) };
}

/**
 * What a fencing round of held keys reads: a `Lock`, or the keys a local hand-off passes on
 * (lock-cohort.ts) before its new `Lock` exists. Without `lose`, a lost lock rejects with a
 * fresh `LockLostError`.
 */
export interface FencedView {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly value: string;
  lose?(reason: 'not-owner', nodes: readonly NodeOutcome[]): LockLostError;
}

/**
 * `Lock.fence()` on the nodes: an owner-checked increment (only nodes where our lock keys
 * still hold our owner token count), then the same settle, write-back and catch-up as an
 * acquisition. The counters are the ones acquisitions increment, so the token is strictly
 * greater than every token handed out before, by an acquisition or a fence.
 */
export async function fenceHeldLock(
  ctx: FencingContext,
  lock: FencedView,
  fenceKeys: readonly string[],
): Promise<ReadonlyMap<string, bigint>> {
  const catchUp = new FenceCatchUp(ctx.nodes, fenceKeys);
  const send = (node: LockNode): Promise<unknown> => fenceHeldOnNode(node, lock.keys, fenceKeys, lock.value);
  const round = await runRound(ctx.nodes, ctx.counted ? (node) => ctx.counted!(node, send(node)) : send, parseFenceHeldReply, {
    quorum: ctx.quorum,
    timeoutMs: ctx.timeoutMs,
    early: true,
    late: catchUp.late,
  });
  if (round.ok >= ctx.quorum) {
    const fenced = await settleFencing(ctx, round, lock.resources, fenceKeys, catchUp);
    if (fenced.ok) return fenced.tokens;
    throw new QuorumUnavailableError({
      resources: lock.resources,
      attempts: 1,
      nodes: fenced.nodes,
      quorum: ctx.quorum,
      reason: fenced.reason,
    });
  }
  // A majority no longer holds our key: someone else may hold the lock now.
  const gone = round.outcomes.filter((o) => o.status === 'absent').length;
  if (gone > ctx.nodes.length - ctx.quorum) {
    throw lock.lose
      ? lock.lose('not-owner', round.outcomes)
      : new LockLostError({ resources: lock.resources, reason: 'not-owner', nodes: round.outcomes });
  }
  throw new QuorumUnavailableError({
    resources: lock.resources,
    attempts: 1,
    nodes: round.outcomes,
    quorum: ctx.quorum,
    reason: `fence() reached only ${round.ok} node(s) holding the lock; the lock itself stays valid until its expiration`,
  });
}
