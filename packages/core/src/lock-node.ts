import { createHash } from 'node:crypto';
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
  /** Commands sent and not yet answered, so close() can let them land before QUIT. */
  private inFlight = 0;
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
   * Sends a command (scripts go through here too): connect on first use, this tick's
   * batching, and close() letting it land first.
   */
  call<T>(command: (client: RedisClientLike) => Promise<T>): Promise<T> {
    if (this.client.status !== 'ready') return this.track(this.connect().then(() => this.issue(command)));
    return this.track(this.issue(command));
  }

  private issue<T>(command: (client: RedisClientLike) => Promise<T>): Promise<T> {
    this.corkForTick();
    return command(this.client);
  }

  /** Counts the command until it settles (one derived promise: this is on every lock operation's path). */
  private track<T>(sent: Promise<T>): Promise<T> {
    this.inFlight++;
    return sent.then(
      (reply) => {
        this.settled();
        return reply;
      },
      (err: unknown) => {
        this.settled();
        throw this.explain(err);
      },
    );
  }

  private settled(): void {
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
   * Holds this tick's writes to the node back until the tick ends, so commands issued
   * together (concurrent callers, a round's release) leave in one write. This replaces
   * ioredis' auto-pipelining, which waits for setImmediate and lets one pipeline per
   * connection be in flight: on a busy event loop that cost a single caller ~40% latency.
   */
  private corkForTick(): void {
    if (this.corked) return;
    const stream = (this.client as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork!();
    });
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
