import { createHash } from 'node:crypto';
import { CommandBacklog } from './command-backlog.js';
import { NodeConnectionState } from './node-state.js';
import { endConnection, type ClientHandle, type RedisClientLike } from './redis-client.js';

/** A Lua script and its SHA1, sent with EVALSHA and re-sent with EVAL on NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Defines a script once, at module load; the SHA is computed here, never per call. */
export function defineScript(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

const guardedSockets = new WeakSet<object>();

/**
 * ioredis listens for a socket's first 'error' only (`once`). A failed TLS handshake can
 * emit a second one (the server's alert after we rejected its certificate), which is
 * then an uncaught exception that crashes the process. Called on every client error:
 * the socket in use gets a permanent no-op listener (ioredis still reports the first).
 */
export function guardSocketErrors(client: object): void {
  const stream = (client as { stream?: { on?: (event: string, listener: () => void) => unknown } }).stream;
  if (!stream || typeof stream.on !== 'function' || guardedSockets.has(stream)) return;
  guardedSockets.add(stream);
  stream.on('error', () => undefined);
}

/**
 * A command of a round: when it was written to its node (monotonic ms), NaN until then.
 * The round's clock for the node starts there, not when the round began.
 */
export interface SendSlot {
  sentAt: number;
}

/**
 * Commands written to one node and not answered yet, at most this many; the others wait
 * client-side, unwritten. A burst of acquisitions in one tick then does not put
 * thousands of replies between a command and the reading of its own reply (time that is
 * ours, not the node's). 128 keeps a local node's pipeline full: a reply takes
 * microseconds to read, the round trip tens of them.
 */
const IN_FLIGHT_WINDOW = 128;

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

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
  private corked = false;
  /** Scripts sent in full (EVAL, which caches them) since the connection was last (re)established. */
  private readonly sentInFull = new Set<string>();
  /** Commands called and not yet settled (written or not), so close() can let them land before QUIT. */
  private inFlight = 0;
  /** Commands written and not yet answered, oldest first (a Set keeps insertion order). */
  private readonly written = new Set<SendSlot>();
  /** Commands waiting for the connection or for room in the in-flight window, oldest first. */
  private readonly backlog = new CommandBacklog();
  /** A connect started for the backlog and not settled yet. */
  private connectingBacklog = false;
  /** Slots of the commands held back by this tick's cork: they are written when it ends. */
  private corkedSlots: SendSlot[] = [];
  /** The slot of the next command called, set by sending() for the synchronous part of a send. */
  private nextSlot: SendSlot | undefined;
  /** close() waiting for `inFlight` to reach 0. */
  private onDrained: (() => void) | undefined;
  /** Called once on the next 'ready' (see onNextReady). */
  private readyWaiters: Array<() => void> = [];
  /** Why the connection is down, and the one warning per state change (down, back up). @internal */
  readonly connection: NodeConnectionState;

  /** `warn` receives one line when the node goes down (with the real cause) and one when it is back. */
  constructor(handle: ClientHandle, warn?: (message: string) => void) {
    this.client = handle.client;
    this.owned = handle.owned;
    this.label = handle.label;
    this.connection = new NodeConnectionState(this.client, this.label, warn);
    // A reconnect may reach a restarted server with an empty script cache.
    this.client.on?.('ready', () => {
      this.sentInFull.clear();
      const waiting = this.readyWaiters;
      this.readyWaiters = [];
      for (const notify of waiting) notify();
    });
    this.client.on?.('error', () => guardSocketErrors(this.client));
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
    return this.call(() => this.sendScript(script, keys, args));
  }

  /**
   * Runs `send`, whose first command (issued synchronously within it) records in `slot`
   * when it is written. Only that one: a follow-up command (a PTTL after a refused SET)
   * answers the same round.
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
    for (const slot of this.written) return slot.sentAt;
    return NaN;
  }

  /**
   * Sends a command (scripts go through here too): connect on first use, this tick's
   * batching, the in-flight window, and close() letting it land first.
   */
  call<T>(command: (client: RedisClientLike) => Promise<T>): Promise<T> {
    const slot = this.nextSlot ?? { sentAt: NaN };
    this.nextSlot = undefined;
    if (this.client.status === 'ready' && this.backlog.empty && this.written.size < IN_FLIGHT_WINDOW) {
      return this.track(this.issue(command, slot), slot);
    }
    return this.track(this.later(command, slot), slot);
  }

  /**
   * Holds a command client-side until the connection is up (connect on first use, not
   * charged to the command: its slot starts when it is written) and the window has room.
   */
  private later<T>(command: (client: RedisClientLike) => Promise<T>, slot: SendSlot): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.backlog.push({ write: () => void this.issue(command, slot).then(resolve, reject), fail: reject });
      this.pump();
    });
  }

  /** Writes waiting commands while the window has room; connects first (once for all of them) when needed. */
  private pump(): void {
    if (this.client.status !== 'ready') {
      if (this.connectingBacklog) return;
      this.connectingBacklog = true;
      // After the connect attempt, write even if not ready (a client passed in that is
      // reconnecting): the client then fails them at once, as without a backlog.
      this.connect().then(
        () => {
          this.connectingBacklog = false;
          this.drain();
        },
        (err: unknown) => {
          this.connectingBacklog = false;
          this.backlog.failAll(err);
        },
      );
      return;
    }
    this.drain();
  }

  private drain(): void {
    this.backlog.writeWhile(() => this.written.size < IN_FLIGHT_WINDOW);
  }

  private issue<T>(command: (client: RedisClientLike) => Promise<T>, slot: SendSlot): Promise<T> {
    // Held back by the cork, it is written when the tick ends: its clock starts then.
    if (this.corkForTick()) this.corkedSlots.push(slot);
    else slot.sentAt = performance.now();
    this.written.add(slot);
    try {
      return command(this.client);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Counts the command until it settles (one derived promise: this is on every lock operation's path). */
  private track<T>(sent: Promise<T>, slot: SendSlot): Promise<T> {
    this.inFlight++;
    return sent.then(
      (reply) => {
        this.settled(slot);
        return reply;
      },
      (err: unknown) => {
        this.settled(slot);
        throw this.explain(err);
      },
    );
  }

  private settled(slot: SendSlot): void {
    // Room in the window: write the oldest waiting commands (each adds itself to `written`).
    if (this.written.delete(slot) && !this.backlog.empty) this.pump();
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

  private async sendScript(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    // The first use of a script on a connection sends it in full. Relying on the NOSCRIPT
    // fallback alone reorders commands: the re-sent EVAL runs after whatever was sent
    // meanwhile, e.g. a release overtaking the acquire it must undo (leaving the key set).
    if (!this.sentInFull.has(script.sha)) {
      this.sentInFull.add(script.sha);
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }

  /**
   * Holds this tick's writes to the node back until the tick ends (true while it does), so commands issued
   * together (concurrent callers, a round's release) leave in one write. This replaces
   * ioredis' auto-pipelining, which waits for setImmediate and lets one pipeline per
   * connection be in flight: on a busy event loop that cost a single caller ~40% latency.
   */
  private corkForTick(): boolean {
    if (this.corked) return true;
    const stream = (this.client as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return false;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork!();
      // Written now: a tick with thousands of commands can take long (not the node's time).
      const sentAt = performance.now();
      const slots = this.corkedSlots;
      this.corkedSlots = [];
      for (const slot of slots) slot.sentAt = sentAt;
    });
    return true;
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

  /** Closes a client this library created; clients passed in are left open. */
  async close(): Promise<void> {
    this.readyWaiters = [];
    if (!this.owned || this.closed) return;
    this.closed = true;
    const ready = this.client.status === 'ready';
    const timeoutMs = this.client.options?.commandTimeout ?? 1_000;
    // Let commands already under way land first: QUIT is written at once, while a
    // release may still wait to be written (corked, or behind a NOSCRIPT re-send) and
    // would be dropped, leaving the key locked until its TTL. Bounded: a paused node
    // must not hang close().
    if (ready) await this.settleInFlight(timeoutMs * 2);
    await endConnection(this.client, ready, timeoutMs * 2);
  }
}
