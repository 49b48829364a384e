import type { NodeConnectionState } from './node-state.js';
import type { RedisClientLike } from './redis-client.js';

/** What the backstop reads of its node. */
export interface BackstopNode {
  readonly client: RedisClientLike;
  readonly connection: NodeConnectionState;
  readonly label: string;
  /** Since when the node is silent about a command written to it (monotonic ms), NaN when none waits. */
  silence(): number;
  isClosed(): boolean;
}

/**
 * The backstop of a node whose client was made without a per-command timeout (see
 * ClientHandle.backstopMs): one timer for all of the node's commands instead of ioredis' timer
 * per command, and a guard on each connection's ready check. Either way a node that stopped
 * answering is reconnected: ioredis then fails every command waiting on it, and the connection's
 * cause names the silence.
 */
export class NodeBackstop {
  private timer: NodeJS.Timeout | undefined;
  /** The guard of the connection's handshake under way: its TCP (and TLS) connect, then its ready check. */
  private handshake: NodeJS.Timeout | undefined;

  constructor(
    private readonly node: BackstopNode,
    private readonly limitMs: number,
    /** The connect limit of a client whose connect this backstop times (ClientHandle.connectLimitMs). */
    private readonly connectLimitMs?: number,
  ) {
    this.guardHandshake();
  }

  /** A command was written: the timer runs while any waits (armed once, not per command). */
  written(): void {
    if (!this.timer) this.arm(this.limitMs);
  }

  close(): void {
    clearTimeout(this.timer);
    clearTimeout(this.handshake);
  }

  /**
   * Rechecks after the poll phase, as a round does: replies that arrived while this process
   * stalled are read first. A node silent for the whole limit (not counting the time we spent
   * reading its other replies) is reconnected.
   */
  private arm(ms: number): void {
    this.timer = setTimeout(() => setImmediate(this.check), Math.max(1, ms));
    this.timer.unref();
  }

  private readonly check = (): void => {
    this.timer = undefined;
    const { node, limitMs } = this;
    const since = node.silence();
    if (node.isClosed() || Number.isNaN(since)) return;
    const silentFor = performance.now() - since;
    if (silentFor < limitMs) return this.arm(limitMs - silentFor);
    this.reconnect(`no answer from ${node.label} for ${Math.round(silentFor)} ms`);
  };

  /**
   * Each step of a connection's handshake is timed here, judged after a poll phase: a connect or a
   * reply that came while this process was busy is read before the step counts as timed out.
   * - The TCP (and TLS) connect, when this backstop has a connect limit: ioredis' connect timeout
   *   fired in the timers phase, before the poll phase read a connect that completed during a
   *   stall, and failed every node of a cold process that stalled past it (see ownClientOptions).
   *   A connect still under way at the limit is dropped, as ioredis drops it, and retried.
   * - The ready check: nothing else ends one the node never answers (a paused server's kernel
   *   accepts the TCP connect); ioredis' per-command timeout did, at the backstop. So a connection
   *   not ready within the backstop of its TCP connect is dropped too.
   */
  private guardHandshake(): void {
    const { client, label } = this.node;
    const stop = (): void => {
      clearTimeout(this.handshake);
      this.handshake = undefined;
    };
    const guard = (limitMs: number, step: 'connecting' | 'connect', timedOut: () => void): void => {
      stop();
      this.handshake = setTimeout(
        () =>
          setImmediate(() => {
            this.handshake = undefined;
            if (!this.node.isClosed() && client.status === step) timedOut();
          }),
        limitMs,
      );
      this.handshake.unref();
    };
    const connectLimitMs = this.connectLimitMs;
    if (connectLimitMs !== undefined) {
      client.on?.('connecting', () =>
        guard(connectLimitMs, 'connecting', () => {
          this.node.connection.silent(`no connection to ${label} within ${connectLimitMs} ms`);
          // end() would wait for the connect; destroy() drops it, and ioredis reconnects as after its own timeout.
          (client as { stream?: { destroy(): void } }).stream?.destroy();
        }),
      );
    }
    client.on?.('connect', () =>
      guard(this.limitMs, 'connect', () => this.reconnect(`no answer to the connection's ready check within ${this.limitMs} ms`)),
    );
    client.on?.('ready', stop);
    client.on?.('close', stop);
  }

  private reconnect(why: string): void {
    this.node.connection.silent(why);
    (this.node.client as { disconnect(reconnect?: boolean): void }).disconnect(true);
  }
}
