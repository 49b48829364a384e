/**
 * The backstop timeout of the commands one lock node wrote, with one timer per node instead of
 * one per command. ioredis' `commandTimeout` arms a timer for every command it is given: ten
 * per uncontended acquire + release on five nodes, the largest part of what separates the
 * library from the bare quorum floor. For the clients the library creates, the node skips that
 * timer (see {@link withoutClientTimer}) and this one expires its commands instead, with the
 * same rule: a command unanswered `ms` after its write is rejected as timed out (its reply,
 * should it come, is dropped; the command stays in the client's queue, as with ioredis' timer).
 *
 * It is a backstop only: each lock round times its nodes itself, sooner (round.ts).
 */

/** One written command as the deadline sees it: when it was written, and how to fail it. */
export interface DeadlineWire {
  /** Monotonic ms of the write; NaN while it waits for the tick's batch to be written. */
  readonly sentAt: number;
  /** Rejects the command's promise (once); set while it is in flight. */
  expire?: (err: Error) => void;
}

/** The error of a command that outlived its deadline (ioredis' message and a code round.ts reads). */
function timedOut(ms: number): Error {
  return Object.assign(new Error(`Command timed out (no reply within ${ms} ms)`), { code: 'ETIMEDOUT' });
}

export class CommandDeadline {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `written`: the node's written, unanswered commands, oldest first (the node removes each as it settles). */
  constructor(
    readonly ms: number,
    private readonly written: ReadonlySet<DeadlineWire>,
  ) {}

  /** Called on each write: makes sure a sweep is due within `ms`. */
  watch(): void {
    if (!this.timer && !this.stopped) this.arm(this.ms);
  }

  /** Stops the timer (the node closed). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The timer fires before this turn's I/O is read: the sweep runs after it (setImmediate runs
   * after the poll phase), so a reply that already arrived, behind a long stretch of our own
   * work in a burst, settles its command instead of being taken for the node's silence.
   */
  private arm(ms: number): void {
    this.timer = setTimeout(() => setImmediate(this.sweep).unref(), Math.max(1, ms));
    this.timer.unref();
  }

  /** Fails the commands past their deadline, oldest first, and sleeps until the next one's. */
  private readonly sweep = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    const now = performance.now();
    for (const wire of this.written) {
      // Not written yet (this tick's batch): its clock has not started.
      if (!(wire.sentAt >= 0)) continue;
      const due = wire.sentAt + this.ms;
      if (due > now) {
        this.arm(due - now);
        return;
      }
      // Settling removes it from `written` (deleting the entry being visited is safe in a Set).
      wire.expire?.(timedOut(this.ms));
    }
    if (this.written.size > 0) this.arm(this.ms);
  };
}

/** The part of an ioredis client whose options it reads on every command. */
interface TimedClient {
  readonly options?: { commandTimeout?: number | undefined };
}

/**
 * Runs `send` (which hands one command to `client` synchronously) without the client's own
 * command timer: ioredis reads `options.commandTimeout` when it is given a command, and only
 * then. Used only for clients the library created, whose options object is its own.
 */
export function withoutClientTimer<T>(client: object, send: () => T): T {
  const options = (client as TimedClient).options;
  const saved = options?.commandTimeout;
  if (!options || saved === undefined) return send();
  options.commandTimeout = undefined;
  try {
    return send();
  } finally {
    options.commandTimeout = saved;
  }
}
