import type { LockNode } from '../nodes/lock-node.js';
import type { SendSlot } from '../nodes/node-wire.js';
import { NodeRestartedError, type NodeOutcome, type NodeStatus } from '../errors/node-outcome.js';
import { describeNodeError } from '../nodes/node-state.js';

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
  /** When the first of the round's commands was written to its node (monotonic ms); undefined if none was. */
  readonly sentAt: number | undefined;
}

export interface RoundOptions<T = unknown> {
  /** Nodes that must answer `ok` for success. */
  readonly quorum: number;
  /** A node that has not answered this many ms after its command was written counts as `timeout`. */
  readonly timeoutMs: number;
  /** Resolve as soon as success, or failure and its kind (contention or outage), is certain, instead of waiting for every node. */
  readonly early: boolean;
  /** Resolve once this many nodes answered, whatever they answered. Default: all of them. */
  readonly settle?: number;
  /**
   * Told of each node's answer that arrives after the round resolved (its outcome and,
   * for `ok`, its parsed value). The fencing catch-up uses it: a node that granted late
   * must still be raised to the issued token.
   */
  readonly late?: (index: number, outcome: NodeOutcome, value: T | undefined) => void;
  /**
   * Told of each node's answer in time; returning true resolves the round at once. For rounds
   * where not every `ok` counts alike (a semaphore needs a quorum of the same slot).
   */
  readonly decided?: (index: number, outcome: NodeOutcome, value: T | undefined) => boolean;
}

function errorText(err: unknown): string {
  const text = describeNodeError(err);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/**
 * Why a node counts as timed out: silent about this round's command for the node timeout, or
 * silent since an earlier command of ours it still leaves unanswered (runRound, LockNode.silenceOf).
 */
function timeoutText(timeoutMs: number, since: number, written: number, now: number): string {
  const text = `no answer within ${timeoutMs} ms`;
  return since < written || Number.isNaN(written)
    ? `${text} (silent for ${Math.round(now - since)} ms: an earlier command is still unanswered)`
    : text;
}

/** The client's own command or connect timeout: the node was slow, not refusing. */
function isTimeout(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (err as { code?: string }).code === 'ETIMEDOUT' || err.message.includes('Command timed out');
}

/**
 * Sends one command to every node in parallel. With `early`, resolves the moment a
 * quorum said `ok` or enough nodes failed that a quorum is impossible; the other
 * nodes keep their `pending` status (their commands still run and may still land).
 *
 * One timer per round, not one per node, bounds the wait, and it measures the nodes,
 * not this process: each node's clock starts when its command is written (not while
 * it waits for the connection, bounded by the connect timeout, or behind our own queue
 * to the node, unless the node stopped answering), restarts with each follow-up command
 * of the node's exchange (see LockNode.exchange), and replies already received are
 * read before anyone is declared timed out.
 */
export function runRound<T>(
  nodes: readonly LockNode[],
  send: (node: LockNode) => Promise<unknown>,
  parse: (reply: unknown) => ParsedReply<T>,
  { quorum, timeoutMs, early, settle = nodes.length, late, decided }: RoundOptions<T>,
): Promise<RoundResult<T>> {
  const n = nodes.length;
  const outcomes: NodeOutcome[] = nodes.map((node) => ({ node: node.label, status: 'pending' }));
  const values = new Array<T | undefined>(n);
  const slots = new Array<SendSlot>(n);
  let ok = 0;
  let notOk = 0;
  let settled = 0;
  let held = 0;
  let failed = 0;
  // No node to ask (the rest of an arbitrated round on a single node): nothing to wait for.
  if (n === 0) return Promise.resolve({ outcomes, values, ok: 0, sentAt: undefined });
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      let sentAt: number | undefined;
      for (const slot of slots) if (slot.sentAt >= 0 && !(slot.sentAt >= sentAt!)) sentAt = slot.sentAt;
      resolve({ outcomes, values, ok, sentAt });
    };
    const record = (i: number, outcome: NodeOutcome, value?: T): void => {
      if (done || outcomes[i]!.status !== 'pending') {
        // After the round resolved, or after this node was declared timed out: not counted,
        // but the caller may still need it (a node that granted late is raised by the fencing catch-up).
        late?.(i, outcome, outcome.status === 'ok' ? value : undefined);
        return;
      }
      if (outcome.status === 'ok') values[i] = value;
      outcomes[i] = outcome;
      settled++;
      if (outcome.status === 'ok') ok++;
      else notOk++;
      if (outcome.status === 'held') held++;
      else if (outcome.status === 'timeout' || outcome.status === 'error') failed++;
      const ready = settled >= settle || (early && (ok >= quorum || notOk > n - quorum)) || decided?.(i, outcome, value) === true;
      if (ready && !(ok < quorum && failureKindOpen())) finish();
    };
    // A failed round whose failed nodes and silent ones could still rule a quorum out, while its
    // held ones alone do not: contention or an outage depends on the silent nodes, so it waits for
    // their answers or timeouts (bounded by the node timeout). One node saying "held" (a partial
    // hold of a concurrent, doomed attempt) must not pass for contention while a majority stopped.
    const failureKindOpen = (): boolean => {
      const silent = n - settled;
      return silent > 0 && failed > 0 && failed + silent > n - quorum && held <= n - quorum;
    };
    // `confirmed`: this check runs one poll phase after a check that found nodes due (see below).
    const expire = (confirmed = false): void => {
      if (done) return;
      const now = performance.now();
      let next = Infinity;
      let recheck = false;
      // record() may finish the round from inside this loop: `done` changes behind TS's narrowing.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      for (let i = 0; i < n && !done; i++) {
        if (outcomes[i]!.status !== 'pending') continue;
        const since = silence(i);
        const due = since + timeoutMs;
        if (due <= now && !confirmed) {
          // A poll phase reads only what had arrived when it began: if this process stalled after
          // that (a long GC pause, a slow callback), replies that came meanwhile are still unread.
          // One more poll phase reads them before anyone is declared timed out.
          recheck = true;
        } else if (due <= now) {
          record(i, { node: nodes[i]!.label, status: 'timeout', error: timeoutText(timeoutMs, since, slots[i]!.waitingSince, now) });
        } else {
          next = Math.min(next, Number.isNaN(due) ? now + timeoutMs : due);
        }
      }
      // An immediate queued in the check phase runs in the next one, after the next poll phase.
      // Never unref'd: the poll phase before an unref'd immediate blocks until some other I/O or
      // timer (a quiet process with its majority paused would check seconds late).
      if (recheck) setImmediate(() => expire(true));
      // Nothing left pending (a `decided` rule that never said yes): nothing more can come.
      else if (next === Infinity) finish();
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- record() above may have finished the round
      else if (!done) arm(next - now);
    };
    // Written: the node's own time, from the write of the command it answers now (an exchange's
    // follow-up restarts it), or from an earlier command it still leaves unanswered (a quarter of
    // the timeout after our write at the earliest, so a node resumed just now may answer). Not written
    // yet: charged only while the node leaves an earlier command unanswered (it is paused or
    // stuck, not just busy). Either way, a node whose later replies we are still reading is
    // answering (see LockNode.silenceOf).
    const silence = (i: number): number => nodes[i]!.silenceOf(slots[i]!.waitingSince, timeoutMs);
    // When to look first: after the node timeout, or sooner for a node already silent before this round.
    const firstCheckIn = (): number => {
      let since = Infinity;
      for (let i = 0; i < n; i++) {
        const s = outcomes[i]!.status === 'pending' ? silence(i) : NaN;
        if (s < since) since = s; // NaN (not written yet) never is
      }
      const dueIn = since + timeoutMs - performance.now();
      // Exactly the node timeout unless a node was silent before this round (this tick's own
      // writes are a fraction of a millisecond old): a timer of the caller's, armed with the same
      // delay after this one, then fires in the same timers phase, after it, as it always did.
      return dueIn < timeoutMs - 1 ? dueIn : timeoutMs;
    };
    // The timer fires before this turn's I/O is read: check after it (setImmediate runs
    // after the poll phase), so an answer that already arrived is not a timeout.
    const arm = (ms: number): void => {
      timer = setTimeout(() => setImmediate(() => expire()), Math.max(1, ms));
      timer.unref();
    };
    for (let i = 0; i < n; i++) {
      const node = nodes[i]!;
      const slot: SendSlot = { sentAt: NaN, waitingSince: NaN };
      slots[i] = slot;
      let reply: Promise<unknown>;
      try {
        reply = node.sending(slot, () => send(node));
      } catch (err) {
        reply = Promise.reject(err);
      }
      reply.then(
        (raw) => {
          const parsed = parse(raw);
          record(
            i,
            parsed.ttlMs === undefined
              ? { node: node.label, status: parsed.status }
              : { node: node.label, status: parsed.status, ttlMs: parsed.ttlMs },
            parsed.value,
          );
        },
        (err: unknown) =>
          record(
            i,
            err instanceof NodeRestartedError
              ? { node: node.label, status: 'error', error: errorText(err), countsAgainInMs: err.countsInMs ?? 0 }
              : { node: node.label, status: isTimeout(err) ? 'timeout' : 'error', error: errorText(err) },
          ),
      );
    }
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a synchronous send failure can finish the round in the loop above
    if (!done) arm(firstCheckIn());
  });
}
