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
  private readyCheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly node: BackstopNode,
    private readonly limitMs: number,
  ) {
    this.guardReadyCheck();
  }

  /** A command was written: the timer runs while any waits (armed once, not per command). */
  written(): void {
    if (!this.timer) this.arm(this.limitMs);
  }

  close(): void {
    clearTimeout(this.timer);
    clearTimeout(this.readyCheck);
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
   * Nothing else ends a ready check the node never answers (ioredis' connectTimeout covers the
   * TCP connect only, and a paused server's kernel accepts that); ioredis' per-command timeout did,
   * at the backstop. So a connection not ready within the backstop of its TCP connect is dropped
   * too, judged after a poll phase: a reply that came while this process was busy is read first.
   */
  private guardReadyCheck(): void {
    const { client } = this.node;
    const limitMs = this.limitMs;
    const stop = (): void => {
      clearTimeout(this.readyCheck);
      this.readyCheck = undefined;
    };
    client.on?.('connect', () => {
      stop();
      this.readyCheck = setTimeout(
        () =>
          setImmediate(() => {
            this.readyCheck = undefined;
            if (this.node.isClosed() || client.status === 'ready') return;
            this.reconnect(`no answer to the connection's ready check within ${limitMs} ms`);
          }),
        limitMs,
      );
      this.readyCheck.unref();
    });
    client.on?.('ready', stop);
    client.on?.('close', stop);
  }

  private reconnect(why: string): void {
    this.node.connection.silent(why);
    (this.node.client as { disconnect(reconnect?: boolean): void }).disconnect(true);
  }
}
