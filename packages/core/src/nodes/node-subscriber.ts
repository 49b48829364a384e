import { guardSocketErrors } from './socket-guard.js';
import type { SubscriberClient } from './node-client.js';
import { endConnection, type RedisClientLike } from './redis-client.js';

/** What a node's subscriber reports to the notifier. */
export interface SubscriberEvents {
  /** A message arrived on `channel` (a release notice; a fair lock's notice names its waiter in `message`). */
  onMessage(node: number, channel: string, message: string): void;
  /** The server confirmed our subscription to `channel` on this connection. */
  onAck(node: number, channel: string): void;
  /** The connection dropped: every subscription on it is gone until re-acknowledged. */
  onLost(node: number): void;
}

/**
 * One lazily opened subscriber connection to one node, shared by every waiter of a
 * Redlock. It is a duplicate of the node's command client (same host, auth, TLS and
 * timeouts), because a connection in subscriber mode cannot run scripts.
 *
 * We resubscribe ourselves on every (re)connect instead of relying on ioredis'
 * autoResubscribe, so each channel's acknowledgement is seen and a channel is only
 * counted as "armed" while the server really delivers its messages.
 */
export class NodeSubscriber {
  private client: SubscriberClient | undefined;
  private readonly wanted = new Set<string>();
  private closed = false;

  constructor(
    private readonly source: RedisClientLike,
    private readonly index: number,
    private readonly events: SubscriberEvents,
  ) {}

  /** True once a connection was opened (for tests and diagnostics). */
  get opened(): boolean {
    return this.client !== undefined;
  }

  /** Starts delivering `channel`; `onAck` reports when the server confirmed it. */
  want(channel: string): void {
    if (this.closed || this.wanted.has(channel)) return;
    this.wanted.add(channel);
    const client = this.client ?? this.open();
    if (client?.status === 'ready') this.subscribe(client, [channel]);
  }

  /** Stops delivering `channel`. Fire-and-forget: a failed UNSUBSCRIBE only costs a stray message. */
  drop(channel: string): void {
    if (!this.wanted.delete(channel)) return;
    const client = this.client;
    if (client?.status === 'ready') client.unsubscribe(channel).catch(() => undefined);
  }

  /** Closes the connection (QUIT when possible, so the server sees a clean exit). */
  async close(): Promise<void> {
    this.closed = true;
    this.wanted.clear();
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    await endConnection(client, client.status === 'ready', 1_000);
    client.removeAllListeners();
    // An 'error' emitted after removeAllListeners would crash the process: keep a sink.
    client.on('error', () => undefined);
  }

  private open(): SubscriberClient | undefined {
    const source = this.source;
    // A client without duplicate() cannot give us a subscriber: waiters on it poll.
    if (typeof source.duplicate !== 'function') return undefined;
    let client: SubscriberClient;
    try {
      client = source.duplicate({ lazyConnect: true, autoResubscribe: false, enableAutoPipelining: false }) as SubscriberClient;
    } catch {
      return undefined;
    }
    this.client = client;
    client.on('message', (channel, message) => this.events.onMessage(this.index, channel, message));
    client.on('ready', () => {
      if (this.wanted.size > 0) this.subscribe(client, [...this.wanted]);
    });
    client.on('close', () => this.events.onLost(this.index));
    // Connection errors are expected while a node is down; ioredis reconnects, we poll meanwhile.
    client.on('error', () => guardSocketErrors(client));
    if (client.status === 'wait') client.connect().catch(() => undefined);
    return client;
  }

  private subscribe(client: SubscriberClient, channels: string[]): void {
    client.subscribe(...channels).then(
      () => {
        if (this.client !== client || client.status !== 'ready') return;
        for (const channel of channels) if (this.wanted.has(channel)) this.events.onAck(this.index, channel);
      },
      () => undefined, // reconnect will resubscribe; until then the channel is not armed on this node
    );
  }
}
