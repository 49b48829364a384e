/**
 * What one Redis node answered during an acquire, extend or release round.
 *
 * - `ok`: the node did what was asked (set, extended or released our key).
 * - `held`: another owner holds the key there (`ttlMs` is its remaining time).
 * - `absent`: our key was not there (already expired or never set).
 * - `error`: the node answered with an error or is unreachable.
 * - `timeout`: no answer within `nodeTimeoutMs`; the command may still land.
 * - `pending`: the round was decided before this node answered.
 */
export type NodeStatus = 'ok' | 'held' | 'absent' | 'error' | 'timeout' | 'pending';

/** One node's answer in a round. Carries no owner token and no credentials. */
export interface NodeOutcome {
  /** The node's label: `host:port` (never the password). */
  readonly node: string;
  readonly status: NodeStatus;
  /** For `held`: the remaining TTL of the other owner's key, in ms. */
  readonly ttlMs?: number;
  /** For `error`/`timeout`: a short description. */
  readonly error?: string;
  /**
   * For `error`: the node restarted without its data and sits out its restart window (the
   * restart rule); its answers count again in this many ms (0 when that is not known yet: its
   * fencing counters are being raised). A wait the caller can plan for, not a node down.
   */
  readonly countsAgainInMs?: number;
}

/**
 * A node's answer that must not count toward a quorum: the restart rule (restart-rule.ts) keeps
 * the node out. A round records it as an `error` outcome with `countsAgainInMs`.
 */
export class NodeRestartedError extends Error {
  override readonly name = 'NodeRestartedError';

  constructor(
    message: string,
    /** When the node's answers count again (ms from now), when the wait is known: its restart window. */
    readonly countsInMs: number | undefined,
  ) {
    super(message);
  }
}
