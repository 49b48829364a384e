import type { LockNode } from './lock-node.js';
import type { NodeOutcome, NodeStatus } from './node-outcome.js';

/** What a script reply means for one node. */
export interface ParsedReply<T> {
  readonly status: NodeStatus;
  readonly value?: T;
  readonly ttlMs?: number;
}

/** The result of sending one command to every node. */
export interface RoundResult<T> {
  /** One outcome per node, in node order. */
  readonly outcomes: NodeOutcome[];
  /** The parsed value of each node that answered `ok`, in node order. */
  readonly values: Array<T | undefined>;
  /** How many nodes answered `ok`. */
  readonly ok: number;
}

export interface RoundOptions<T = unknown> {
  /** Nodes that must answer `ok` for success. */
  readonly quorum: number;
  /** Nodes still unanswered after this many ms count as `timeout`. */
  readonly timeoutMs: number;
  /** Resolve as soon as success or failure is certain, instead of waiting for every node. */
  readonly early: boolean;
  /** Resolve once this many nodes answered, whatever they answered. Default: all of them. */
  readonly settle?: number;
  /**
   * Told of each node's answer that arrives after the round resolved (its outcome and,
   * for `ok`, its parsed value). The fencing catch-up uses it: a node that granted late
   * must still be raised to the issued token.
   */
  readonly late?: (index: number, outcome: NodeOutcome, value: T | undefined) => void;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/**
 * Sends one command to every node in parallel. With `early`, resolves the moment a
 * quorum said `ok` or enough nodes failed that a quorum is impossible; the other
 * nodes keep their `pending` status (their commands still run and may still land).
 * One timer per round, not one per node, bounds the wait.
 */
export function runRound<T>(
  nodes: readonly LockNode[],
  send: (node: LockNode) => Promise<unknown>,
  parse: (reply: unknown) => ParsedReply<T>,
  { quorum, timeoutMs, early, settle = nodes.length, late }: RoundOptions<T>,
): Promise<RoundResult<T>> {
  const n = nodes.length;
  const outcomes: NodeOutcome[] = nodes.map((node) => ({ node: node.label, status: 'pending' }));
  const values = new Array<T | undefined>(n);
  let ok = 0;
  let notOk = 0;
  let settled = 0;
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ outcomes, values, ok });
    };
    const timer = setTimeout(() => {
      for (let i = 0; i < n; i++) {
        if (outcomes[i]!.status === 'pending') {
          outcomes[i] = { node: nodes[i]!.label, status: 'timeout', error: `no answer within ${timeoutMs} ms` };
        }
      }
      finish();
    }, timeoutMs);
    timer.unref();
    const record = (i: number, outcome: NodeOutcome): void => {
      if (done) {
        late?.(i, outcome, outcome.status === 'ok' ? values[i] : undefined);
        return;
      }
      outcomes[i] = outcome;
      settled++;
      if (outcome.status === 'ok') ok++;
      else notOk++;
      if (settled >= settle || (early && (ok >= quorum || notOk > n - quorum))) finish();
    };
    for (let i = 0; i < n; i++) {
      const node = nodes[i]!;
      let reply: Promise<unknown>;
      try {
        reply = send(node);
      } catch (err) {
        reply = Promise.reject(err);
      }
      reply.then(
        (raw) => {
          const parsed = parse(raw);
          if (parsed.status === 'ok') values[i] = parsed.value;
          record(
            i,
            parsed.ttlMs === undefined
              ? { node: node.label, status: parsed.status }
              : { node: node.label, status: parsed.status, ttlMs: parsed.ttlMs },
          );
        },
        (err: unknown) => record(i, { node: node.label, status: 'error', error: errorText(err) }),
      );
    }
  });
}
