import type { LockNode } from '../nodes/lock-node.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import { runRound, type ParsedReply, type RoundOptions, type RoundResult } from './round.js';

/**
 * Rounds decided by one node before the others were asked. Nothing was sent to those
 * others, so a failed attempt has no partial holds to release there.
 */
const decidedByArbiter = new WeakSet<RoundResult<unknown>>();

/** Whether `round` stopped at its arbiter (lost there): nothing else was sent. */
export function stoppedAtArbiter(round: RoundResult<unknown>): boolean {
  return decidedByArbiter.has(round);
}

/** FNV-1a over `text`, 32 bits: a stable, cheap hash (the same in every process). */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Each node's label hashed once (rendezvous scores combine it with the key's hash). */
const labelHashes = new WeakMap<LockNode, number>();

function labelHash(node: LockNode): number {
  let h = labelHashes.get(node);
  if (h === undefined) labelHashes.set(node, (h = fnv1a(node.label)));
  return h;
}

/** MurmurHash3's 32-bit finalizer: every input bit affects every output bit. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The arbiter of `key`: rendezvous hashing over the node labels, so every process picks the
 * same node whatever order its nodes were configured in, and different keys spread over
 * the nodes. Nodes known to be down, or sitting on an unanswered command for half the
 * node timeout, are skipped (an arbiter must answer fast or it only adds latency).
 * Returns -1 when no node qualifies. The key is hashed once and each label once per process:
 * this runs on every release of a plain lock (see scripts/wake-queue.ts).
 */
export function arbiterOf(nodes: readonly LockNode[], key: string, timeoutMs: number, usable?: (node: LockNode) => boolean): number {
  const now = performance.now();
  const keyHash = fnv1a(key);
  let best = -1;
  let bestScore = -1;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    if (node.connection.isDown || now - node.unansweredSince() > timeoutMs / 2 || (usable && !usable(node))) continue;
    const score = mix(keyHash ^ labelHash(node));
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}

/**
 * An acquire round for a waiter that is retrying, i.e. under contention. The plain round
 * sends to every node at once; when several processes are woken by the same release
 * notice, their attempts then split the nodes between them, nobody reaches a quorum, all
 * release and wait again (a thundering herd that can collapse throughput). Here the
 * attempt goes to one node first, the key's arbiter, the same for every process: the one
 * waiter that wins there then asks the others, which are free; the losers stop after one
 * command, with nothing to release. The guarantees are those of the plain round (the same
 * command on every node asked, a quorum of grants, validity counted from the first
 * write); it costs one more round trip, paid only by attempts that already waited.
 *
 * If the arbiter does not grant or deny (error, timeout), the round falls back to asking
 * every node at once.
 *
 * `follow`, when given, makes the command the others get from what the arbiter granted (a
 * semaphore: the same slot, so contenders agree on the slot they fight for). Every `ok` of
 * theirs then means the same grant: that rest round counts them plainly (`early`, no `decided`).
 */
export async function arbitratedRound<T>(
  nodes: readonly LockNode[],
  arbiter: number,
  send: (node: LockNode) => Promise<unknown>,
  parse: (reply: unknown) => ParsedReply<T>,
  options: RoundOptions<T>,
  follow?: (granted: T | undefined) => (node: LockNode) => Promise<unknown>,
): Promise<RoundResult<T>> {
  const first = nodes[arbiter]!;
  const others = nodes.filter((_, i) => i !== arbiter);
  const late = options.late;
  const head = await runRound([first], send, parse, {
    quorum: 1,
    timeoutMs: options.timeoutMs,
    early: true,
    ...(late ? { late: (_: number, outcome: NodeOutcome, value: T | undefined) => late(arbiter, outcome, value) } : {}),
  });
  const answer = head.outcomes[0]!;
  if (answer.status === 'held') {
    const outcomes: NodeOutcome[] = nodes.map((node, i) => (i === arbiter ? answer : { node: node.label, status: 'pending' }));
    const lost: RoundResult<T> = { outcomes, values: new Array<T | undefined>(nodes.length), ok: 0, sentAt: head.sentAt };
    decidedByArbiter.add(lost);
    return lost;
  }
  if (answer.status !== 'ok') {
    // Validity still counts from the arbiter's write: its command may yet land.
    const all = await runRound(nodes, send, parse, options);
    return {
      ...all,
      sentAt: head.sentAt === undefined || all.sentAt === undefined ? (head.sentAt ?? all.sentAt) : Math.min(head.sentAt, all.sentAt),
    };
  }
  // Index in `nodes` of the i-th of `others`.
  const full = (i: number): number => (i < arbiter ? i : i + 1);
  const restOptions: RoundOptions<T> = {
    ...options,
    quorum: options.quorum - 1,
    ...(late ? { late: (i: number, outcome: NodeOutcome, value: T | undefined) => late(full(i), outcome, value) } : {}),
  };
  const rest = follow
    ? await runRound(others, follow(head.values[0]), parse, plainCount(restOptions))
    : await runRound(others, send, parse, restOptions);
  const outcomes: NodeOutcome[] = [];
  const values = new Array<T | undefined>(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    if (i === arbiter) {
      outcomes.push(answer);
      values[i] = head.values[0];
    } else {
      const j = i < arbiter ? i : i - 1;
      outcomes.push(rest.outcomes[j]!);
      values[i] = rest.values[j];
    }
  }
  return { outcomes, values, ok: rest.ok + 1, sentAt: head.sentAt };
}

/** `options` without a `decided` rule, resolving as soon as the count of `ok`s settles the round. */
function plainCount<T>({ decided: _decided, ...options }: RoundOptions<T>): RoundOptions<T> {
  return { ...options, early: true };
}

/** What the hints read from their Redlock: its restart rule and its release notices. */
interface HintSources {
  readonly restarts?: { excluded(node: LockNode): string | undefined } | undefined;
  readonly notices: { preferNode(key: string, node: number): void };
}

/** The hints of one Redlock, reading `sources()` at each use (its fields may be set after this is made). */
export function contentionHints(sources: () => HintSources): ContentionHints {
  return {
    usable: (node) => !sources().restarts?.excluded(node),
    chose: (key, node) => sources().notices.preferNode(key, node),
  };
}

/** How an acquire round learns about node health, and tells whom it chose. */
export interface ContentionHints {
  /** Whether a node's grants count right now (the restart rule). */
  readonly usable: (node: LockNode) => boolean;
  /** Told the arbiter chosen for `key`, so its release notice alone wakes the next waiter. */
  readonly chose: (key: string, node: number) => void;
}

/**
 * An acquire round: arbitrated when `contendedKey` is set (a retry, or a key that saw waiters
 * lately) and a usable arbiter exists, else every node at once. `follow`: see arbitratedRound.
 */
export function acquireRound<T>(
  nodes: readonly LockNode[],
  send: (node: LockNode) => Promise<unknown>,
  parse: (reply: unknown) => ParsedReply<T>,
  options: RoundOptions<T>,
  contendedKey: string | undefined,
  hints: ContentionHints,
  follow?: (granted: T | undefined) => (node: LockNode) => Promise<unknown>,
): Promise<RoundResult<T>> {
  const arbiter = contendedKey === undefined ? -1 : arbiterOf(nodes, contendedKey, options.timeoutMs, hints.usable);
  if (arbiter < 0) return runRound(nodes, send, parse, options);
  hints.chose(contendedKey!, arbiter);
  return arbitratedRound(nodes, arbiter, send, parse, options, follow);
}
