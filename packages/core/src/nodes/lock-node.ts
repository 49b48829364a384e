import { NodeBackstop } from './node-backstop.js';
import { ScriptSender, type LuaScript } from './lua-script.js';
import { guardSocketErrors } from './socket-guard.js';
import { NodeTransport } from './node-transport.js';
import type { NodeExchange, SendSlot } from './node-wire.js';
import { endConnection, type ClientHandle, type RedisClientLike } from './redis-client.js';

/**
 * One independent Redis node of a Redlock. Runs scripts by SHA (falling back to EVAL
 * when the server lost its script cache, e.g. after a restart) and connects clients
 * the library created on first use. Its write path (tick batching, the in-flight window,
 * the backlog, the accounting the rounds read) is its base, NodeTransport (node-transport.ts).
 */
export class LockNode extends NodeTransport {
  readonly owned: boolean;
  private connecting: Promise<void> | undefined;
  private closed = false;
  /** The backstop of a client created without a command timeout (see ClientHandle.backstopMs). */
  protected override readonly backstop: NodeBackstop | undefined;
  /** Runs scripts by SHA, sent in full once per connection. */
  private readonly scripts: ScriptSender;
  /** The slot of the next command called, set by sending() for the synchronous part of a send. */
  private nextSlot: SendSlot | undefined;
  /** Called once on the next 'ready' (see onNextReady). */
  private readyWaiters: Array<() => void> = [];
  /** Listeners of ours on the client, removed by close(): a client passed in outlives this node. */
  private readonly detach: Array<() => void> = [];

  /** `warn` receives one line when the node goes down (with the real cause) and one when it is back. */
  constructor(handle: ClientHandle, warn?: (message: string) => void) {
    super(handle, warn);
    this.owned = handle.owned;
    this.scripts = new ScriptSender(this.client);
    // A reconnect may reach a restarted server with an empty script cache.
    this.listen('ready', () => {
      this.scripts.reset();
      const waiting = this.readyWaiters;
      this.readyWaiters = [];
      for (const notify of waiting) notify();
    });
    this.listen('error', () => guardSocketErrors(this.client));
    if (handle.backstopMs !== undefined) {
      this.backstop = new NodeBackstop(
        {
          client: this.client,
          connection: this.connection,
          label: this.label,
          silence: () => {
            const waiting = this.unansweredSince();
            return Number.isNaN(waiting) ? NaN : this.silentSince(waiting);
          },
          isClosed: () => this.closed,
        },
        handle.backstopMs,
        handle.connectLimitMs,
      );
    }
  }

  private listen(event: string, listener: () => void): void {
    this.client.on?.(event, listener);
    this.detach.push(() => this.client.removeListener?.(event, listener));
  }

  /** Connects a client this library created (or one passed in that never connected), once; a failed connect is retried on the next call. */
  override connect(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('connection closed (its Redlock was closed)'));
    // Callers arriving while our connect is under way (status 'connecting'/'connect') wait
    // for it: sending now would fail at once, as the offline queue is disabled.
    if (this.connecting) return this.connecting;
    const status = this.client.status;
    // A client passed in is connected only if it never was (lazyConnect): ioredis would start
    // that connect on the first command anyway, but fail the command (no offline queue).
    // One closed by its owner ('end') stays closed.
    if ((status !== 'wait' && !(this.owned && status === 'end')) || !this.client.connect) return Promise.resolve();
    this.connecting ??= this.client.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Calls `notify` once, the next time the connection becomes ready (connect or reconnect). Dropped by close(). */
  onNextReady(notify: () => void): void {
    if (!this.closed) this.readyWaiters.push(notify);
  }

  /** Runs `script` with `keys` and `args`. Rejects with the client's error. */
  run(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    return this.call(() => this.scripts.send(script, keys, args));
  }

  /**
   * Runs `send`, whose first command (issued synchronously within it) records in `slot`
   * when it is written. A follow-up command (a PTTL after a refused SET) counts for the
   * same round only when sent through {@link exchange}, taken synchronously within `send`.
   */
  sending<T>(slot: SendSlot, send: () => Promise<T>): Promise<T> {
    this.nextSlot = slot;
    try {
      return send();
    } finally {
      this.nextSlot = undefined;
    }
  }

  /**
   * The commands a round's `send` sends to this node, when there are several in sequence
   * (a `SET NX`, then a scan of the other slots if it was refused). Taken synchronously
   * within `send`, before its first command. Each command of the exchange restarts the
   * node's timeout clock when it is written, and a follow-up waiting in our backlog is not
   * charged to the node: the time it waits behind a burst's other commands is ours. A
   * follow-up also goes before the commands that start new exchanges (see CommandBacklog).
   * Validity still counts from the first command's write.
   *
   * @example
   * ```ts
   * const x = node.exchange();
   * return x.call((c) => c.set(key, token, 'PX', ttlMs, 'NX')).then((r) => (r === 'OK' ? r : x.call((c) => c.pttl(key))));
   * ```
   */
  exchange(): NodeExchange {
    const slot = this.nextSlot;
    this.nextSlot = undefined;
    if (!slot) return this;
    let first = true;
    const send = <T>(command: (client: RedisClientLike) => Promise<T>): Promise<T> => {
      const followUp = !first;
      first = false;
      return this.send(command, slot, followUp);
    };
    return {
      call: send,
      run: (script, keys, args) => send(() => this.scripts.send(script, keys, args)),
    };
  }

  /**
   * Sends a command (scripts go through here too): connect on first use, this tick's
   * batching, the in-flight window, and close() letting it land first.
   */
  call<T>(command: (client: RedisClientLike) => Promise<T>): Promise<T> {
    const slot = this.nextSlot;
    this.nextSlot = undefined;
    return this.send(command, slot, false);
  }

  /**
   * Closes a client this library created. A client passed in stays open and is handed back
   * as found: the connect this node started on it and the commands it sent have settled
   * (bounded), and no listener of ours is left on it.
   */
  async close(): Promise<void> {
    this.readyWaiters = [];
    if (this.closed) return;
    this.closed = true;
    this.backstop?.close();
    const timeoutMs = this.answerLimitMs;
    if (!this.owned) return this.handBack(timeoutMs * 2);
    const ready = this.client.status === 'ready';
    // Let commands already under way land first: QUIT is written at once, while a
    // release may still wait to be written (corked, or behind a NOSCRIPT re-send) and
    // would be dropped, leaving the key locked until its TTL. Bounded: a paused node
    // must not hang close().
    if (ready) await this.settleInFlight(timeoutMs * 2);
    await endConnection(this.client, ready, timeoutMs * 2);
  }

  /**
   * Acquire and release resolve on a majority, so the slowest node's connect (started by us on
   * a lazy client passed in) may still be under way at close(): its owner's next command would
   * then be refused (no offline queue). Wait for it, and for our commands on it, before handing
   * the client back; then drop our listeners (they would pile up with every Redlock over it).
   */
  private async handBack(boundMs: number): Promise<void> {
    const connecting = this.connecting;
    if (connecting) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)));
      await Promise.race([connecting.catch(() => undefined), bound]);
      clearTimeout(timer);
    }
    await this.settleInFlight(boundMs);
    for (const off of this.detach.splice(0)) off();
    this.connection.detach();
    // An adapter (node-redis) removes the listeners it put on the client it wraps.
    (this.client as { detach?: () => void }).detach?.();
  }
}
