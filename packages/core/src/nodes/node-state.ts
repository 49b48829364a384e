/**
 * The real cause of a node failure, in the words an operator acts on: `ECONNREFUSED 127.0.0.1:6390`,
 * `ENOTFOUND redis-a`, `WRONGPASS invalid username-password pair…`. Node's socket errors start with
 * the failed system call ("connect ECONNREFUSED …", "getaddrinfo ENOTFOUND …"), which is dropped so
 * the error code comes first (hints match codes by the first word).
 *
 * @example
 * ```ts
 * describeNodeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { syscall: 'connect' }));
 * // 'ECONNREFUSED 127.0.0.1:6390'
 * ```
 */
export function describeNodeError(err: unknown): string {
  if (!isErrorLike(err)) return String(err);
  const syscall = (err as { syscall?: unknown }).syscall;
  const text = err.message;
  if (typeof syscall === 'string' && text.startsWith(`${syscall} `)) return text.slice(syscall.length + 1);
  return text;
}

/** An Error, also one made in another realm (socket errors come from Node's own, e.g. under a test VM). */
function isErrorLike(err: unknown): err is Error {
  return err instanceof Error || (typeof err === 'object' && err !== null && typeof (err as Error).message === 'string');
}

/** The events of a client this watcher needs (ioredis emits them). */
interface EventSource {
  readonly status?: string;
  on?(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener?(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * Follows one node's connection: why it is down, and one warning per state change, "down" (with
 * the real cause) and "back up", however many reconnect attempts fail in between. Command errors
 * while the connection is down are explained by that cause instead of ioredis' own words
 * ("Stream isn't writeable and enableOfflineQueue options is false", "Connection is closed.").
 */
export class NodeConnectionState {
  /** Why the connection is not ready, once known; undefined while ready. */
  private cause: string | undefined;
  /** The error code of that cause (`ECONNREFUSED`, `ETIMEDOUT`), when it had one. */
  private causeCode: string | undefined;
  /** When the "down" line was written (monotonic ms); undefined while up. */
  private downSince: number | undefined;
  /** Our listeners on the client, for detach(). */
  private readonly listeners: Array<[string, (...args: unknown[]) => void]> = [];

  constructor(
    private readonly client: EventSource,
    private readonly label: string,
    private readonly warn: ((message: string) => void) | undefined,
  ) {
    const on = (event: string, listener: (...args: unknown[]) => void): void => {
      this.listeners.push([event, listener]);
      client.on?.(event, listener);
    };
    on('error', (err: unknown) => {
      this.cause = this.withAddress(describeNodeError(err));
      const code = (err as { code?: unknown } | null)?.code;
      this.causeCode = typeof code === 'string' ? code : undefined;
      this.markDown();
    });
    on('close', () => {
      // The server went away without a socket error (killed, restarted): the reconnect's error refines it.
      this.cause ??= `connection to ${label} lost`;
    });
    on('ready', () => {
      this.cause = undefined;
      this.causeCode = undefined;
      if (this.downSince === undefined) return;
      const downS = (performance.now() - this.downSince) / 1000;
      this.downSince = undefined;
      warn?.(`lock node ${label} is back up (down for ${downS < 10 ? downS.toFixed(1) : Math.round(downS)} s).`);
    });
  }

  /**
   * The node stopped answering (`why`, see LockNode's backstop and ready-check guard) and is about
   * to be reconnected: that is the cause its waiting commands fail with, as a timeout (the node
   * may only be slow, and is retried).
   */
  silent(why: string): void {
    this.cause = `${why}; reconnecting`;
    this.causeCode = 'ETIMEDOUT';
    this.markDown();
  }

  /** The "down" line, once per outage. */
  private markDown(): void {
    if (this.downSince !== undefined) return;
    this.downSince = performance.now();
    this.warn?.(`lock node ${this.label} is down (${this.cause}); it counts as failed until it reconnects.`);
  }

  /** Removes our listeners from the client (one passed in outlives its Redlock). */
  detach(): void {
    for (const [event, listener] of this.listeners.splice(0)) this.client.removeListener?.(event, listener);
  }

  /** A bare socket error code (`ECONNRESET`, `ETIMEDOUT`) gets the node's address, as `ECONNREFUSED 10.0.0.5:6379` has. */
  private withAddress(text: string): string {
    return /^E[A-Z]+$/.test(text) ? `${text} ${this.label}` : text;
  }

  /** Whether the node is known to be down (the "down" line was written and it is not back up). */
  get isDown(): boolean {
    return this.downSince !== undefined;
  }

  /**
   * A command's error, explained: while the connection is not ready, the connection's cause
   * (the original error stays as `cause`); a Redis reply on a ready connection as it is.
   */
  explain(err: unknown): unknown {
    const status = this.client.status;
    if (status === undefined || !isErrorLike(err)) return err;
    // Just after a server died the status still reads 'ready' until ioredis handles the socket's
    // 'close', but the socket no longer takes writes: that is the connection's failure too.
    const stream = (this.client as { stream?: { writable?: boolean } }).stream;
    if (status === 'ready' && stream?.writable !== false) return err;
    const why = this.cause ?? (status === 'ready' ? `connection to ${this.label} lost` : `not connected to ${this.label} (${status})`);
    if (err.message === why) return err;
    // Keeps the connection error's code (ETIMEDOUT: the node may only be slow, and is retried).
    return Object.assign(new Error(why, { cause: err }), this.cause !== undefined && this.causeCode ? { code: this.causeCode } : {});
  }

  /** The text for a node's failure in a health entry or report: the explained error's message. */
  describe(err: unknown): string {
    return describeNodeError(this.explain(err));
  }
}
