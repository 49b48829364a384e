import { CommandBacklog } from './command-backlog.js';
import { NodeBackstop } from './node-backstop.js';
import { NodeConnectionState } from './node-state.js';
import { ScriptSender, type LuaScript } from './lua-script.js';
import { guardSocketErrors } from './socket-guard.js';
import { TickBatch } from './tick-batch.js';
import { handOver, IN_FLIGHT_WINDOW, isReplyError, stamp, type NodeExchange, type SendSlot, type Wire } from './node-wire.js';
import { endConnection, type ClientHandle, type RedisClientLike } from './redis-client.js';

/**
 * One independent Redis node of a Redlock. Runs scripts by SHA (falling back to EVAL
 * when the server lost its script cache, e.g. after a restart) and connects clients
 * the library created on first use.
 */
export class LockNode {
  readonly client: RedisClientLike;
  readonly owned: boolean;
  readonly label: string;
  private connecting: Promise<void> | undefined;
  private closed = false;
  /** This tick's writes: at once, or batched in one write at the tick's end (see TickBatch). */
  private readonly tickBatch: TickBatch;
  /** The backstop of a client created without a command timeout (see ClientHandle.backstopMs). */
  private readonly backstop: NodeBackstop | undefined;
  /** Runs scripts by SHA, sent in full once per connection. */
  private readonly scripts: ScriptSender;
  /** Commands called and not yet settled (written or not), so close() can let them land before QUIT. */
  private inFlight = 0;
  /** Commands written and not yet answered, oldest first (a Set keeps insertion order). */
  private readonly written = new Set<Wire>();
  /** Commands waiting for the connection or for room in the in-flight window, oldest first. */
  private readonly backlog = new CommandBacklog();
  /** A connect started for the backlog and not settled yet. */
  private connectingBacklog = false;
  /** The slot of the next command called, set by sending() for the synchronous part of a send. */
  private nextSlot: SendSlot | undefined;
  /** close() waiting for `inFlight` to reach 0. */
  private onDrained: (() => void) | undefined;
  /** Called once on the next 'ready' (see onNextReady). */
  private readyWaiters: Array<() => void> = [];
  /** Why the connection is down, and the one warning per state change (down, back up). @internal */
  readonly connection: NodeConnectionState;
  /** When the last reply (a result or a Redis error reply, not a client-side failure) was read. */
  private lastAnswerAt = -Infinity;
  private readonly cluster: boolean;
  /** Listeners of ours on the client, removed by close(): a client passed in outlives this node. */
  private readonly detach: Array<() => void> = [];

  /** `warn` receives one line when the node goes down (with the real cause) and one when it is back. */
  constructor(handle: ClientHandle, warn?: (message: string) => void) {
    this.client = handle.client;
    this.owned = handle.owned;
    this.label = handle.label;
    this.tickBatch = new TickBatch(this.client, this.client.options?.commandTimeout !== undefined);
    this.scripts = new ScriptSender(this.client);
    this.connection = new NodeConnectionState(this.client, this.label, warn);
    this.cluster = (this.client as { isClusterClient?: boolean }).isClusterClient === true;
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
      );
    }
  }

  private listen(event: string, listener: () => void): void {
    this.client.on?.(event, listener);
    this.detach.push(() => this.client.removeListener?.(event, listener));
  }

  /** Connects a client this library created (or one passed in that never connected), once; a failed connect is retried on the next call. */
  connect(): Promise<void> {
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
   * Since when the oldest command written to this node waits for its answer (monotonic
   * ms), NaN when none does. Redis answers one connection's commands in order: an old
   * unanswered command means the node (or the network) stopped, not that we are busy.
   */
  unansweredSince(): number {
    for (const wire of this.written) return wire.sentAt;
    return NaN;
  }

  /**
   * When the node's silence about a command that waits since `since` began: `since`, or the
   * last reply read from the node if later. Redis answers one connection's commands in order,
   * so a node whose replies we are still reading is answering; a reply of ours not read yet
   * sits behind them, in our socket, when a burst keeps our event loop from reading it (the
   * round's check runs after one poll phase, which reads only part of a large backlog), or on a
   * slow link. So the ttl/3 cap bounds the wait on a silent node, not an attempt (README). Not
   * for a Redis Cluster node: its replies come from several masters, one of which may stop.
   */
  silentSince(since: number): number {
    return this.cluster ? since : Math.max(since, this.lastAnswerAt);
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

  private send<T>(command: (client: RedisClientLike) => Promise<T>, slot: SendSlot | undefined, followUp: boolean): Promise<T> {
    const wire: Wire = { sentAt: NaN, slot };
    if (this.client.status === 'ready' && this.backlog.empty && this.written.size < IN_FLIGHT_WINDOW) {
      return this.track(this.issue(command, wire), wire);
    }
    // Waiting unwritten: the node is not answering this command yet.
    if (slot) slot.waitingSince = NaN;
    return this.track(this.later(command, wire, followUp), wire);
  }

  /**
   * Holds a command client-side until the connection is up (connect on first use, not
   * charged to the command: its clock starts when it is written) and the window has room.
   */
  private later<T>(command: (client: RedisClientLike) => Promise<T>, wire: Wire, followUp: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.backlog.push({ write: () => void this.issue(command, wire).then(resolve, reject), fail: reject }, followUp);
      this.pump();
    });
  }

  /** Writes waiting commands while the window has room; connects first (once for all of them) when needed. */
  private pump(): void {
    if (this.client.status !== 'ready') {
      if (this.connectingBacklog) return;
      this.connectingBacklog = true;
      // After the connect attempt, write even if not ready (a client passed in that is
      // reconnecting): the client then fails them at once, as without a backlog. The wait is
      // bounded: a command waiting for the connection is not charged to the node by the rounds
      // (nothing was written), so a connect that never settles (a handshake the node never
      // answers, a cluster that never reports ready) must not keep it, and its round, forever.
      let bound: NodeJS.Timeout | undefined;
      const limitMs = this.connectBoundMs();
      new Promise<void>((resolve, reject) => {
        // Judged after a poll phase, as a round's timer is: a connect that completed while this
        // process was busy (a burst's tick) is read before it counts as never settling.
        bound = setTimeout(() => setImmediate(() => reject(this.noConnection(limitMs))), limitMs);
        this.connect().then(resolve, reject);
      }).then(
        () => {
          clearTimeout(bound);
          this.connectingBacklog = false;
          this.drain();
        },
        (err: unknown) => {
          clearTimeout(bound);
          this.connectingBacklog = false;
          this.backlog.failAll(err);
        },
      );
      return;
    }
    this.drain();
  }

  /**
   * How long commands wait for a connection at most: a last resort against a connect that never
   * settles, never a judge of a slow one (the time a burst's tick takes is ours, and counts here):
   * 20 × the client's connect timeout (or command timeout), at least 10 s, as the command backstop.
   */
  private connectBoundMs(): number {
    return Math.max(10_000, 20 * (this.client.options?.connectTimeout ?? this.client.options?.commandTimeout ?? 1_000));
  }

  /** The error of commands that waited `ms` for a connection: a timeout, so the node counts as slow, not refusing. */
  private noConnection(ms: number): Error {
    return Object.assign(new Error(`no connection to ${this.label} within ${ms} ms`), { code: 'ETIMEDOUT' });
  }

  private drain(): void {
    this.backlog.writeWhile(() => this.written.size < IN_FLIGHT_WINDOW);
  }

  private issue<T>(command: (client: RedisClientLike) => Promise<T>, wire: Wire): Promise<T> {
    this.written.add(wire);
    this.backstop?.written();
    const batch = this.tickBatch.next();
    if (!batch) {
      stamp(wire, performance.now());
      return handOver(command, this.client);
    }
    // Written when the tick ends: its clocks (ours, and a client's own command timeout) start then.
    if (wire.slot) wire.slot.waitingSince = NaN;
    return new Promise<T>((resolve, reject) => {
      batch.push((writtenAt) => {
        stamp(wire, writtenAt);
        handOver(command, this.client).then(resolve, reject);
      });
    });
  }

  /** Counts the command until it settles (one derived promise: this is on every lock operation's path). */
  private track<T>(sent: Promise<T>, wire: Wire): Promise<T> {
    this.inFlight++;
    return sent.then(
      (reply) => {
        this.lastAnswerAt = performance.now();
        this.settled(wire);
        return reply;
      },
      (err: unknown) => {
        if (isReplyError(err)) this.lastAnswerAt = performance.now();
        this.settled(wire);
        throw this.explain(err);
      },
    );
  }

  private settled(wire: Wire): void {
    // Room in the window: write the oldest waiting commands (each adds itself to `written`).
    if (this.written.delete(wire) && !this.backlog.empty) this.pump();
    if (--this.inFlight === 0) this.onDrained?.();
  }

  /**
   * "Connection is closed." and "Stream isn't writeable…" say nothing of why; the connection's
   * own error does (refused connection, unknown host, refused credentials), so the caller's
   * error names the real cause and the fix.
   */
  private explain(err: unknown): unknown {
    return this.connection.explain(err);
  }

  private async settleInFlight(boundMs: number): Promise<void> {
    if (this.inFlight === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.onDrained = resolve;
      timer = setTimeout(resolve, boundMs);
    });
    this.onDrained = undefined;
    clearTimeout(timer);
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
    // How long the node may take to say anything at all: its connect timeout (its command
    // timeout is a late backstop, see commandBackstopMs), else the command timeout of a client that has none.
    const timeoutMs = this.client.options?.connectTimeout ?? this.client.options?.commandTimeout ?? 1_000;
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
