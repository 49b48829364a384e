/**
 * This process' own wake-up channel (see scripts/wake-queue.ts): one subscription per node,
 * opened when an addressed wait starts and dropped once no key's waits linger any more. A release
 * on a key's arbiter names the key in a message on the channel of the process whose turn it is.
 */
export class WakeChannel {
  /** Nodes whose subscription is confirmed on their current connection. */
  private readonly acked: Uint8Array;
  private ackCount = 0;
  private wanted = false;
  /** Since when enough nodes confirmed the subscription that no wake-up can go unheard; Infinity while not. */
  armedAt = Infinity;

  /**
   * @param name the channel (`<prefix>wake:<process id>`)
   * @param need nodes that must confirm it before it counts as armed
   * @param subscribe starts the subscription on every node (their acks come to {@link ack})
   */
  constructor(
    readonly name: string,
    nodes: number,
    private readonly need: number,
    private readonly subscribe: (channel: string) => void,
  ) {
    this.acked = new Uint8Array(nodes);
  }

  /** Subscribes on first use. */
  want(): void {
    if (this.wanted) return;
    this.wanted = true;
    this.subscribe(this.name);
  }

  /** Unsubscribes (no waits left); the next want() subscribes again. */
  drop(unsubscribe: (channel: string) => void): void {
    if (!this.wanted) return;
    this.wanted = false;
    this.acked.fill(0);
    this.ackCount = 0;
    this.armedAt = Infinity;
    unsubscribe(this.name);
  }

  /** A node confirmed the subscription; true when that armed the channel. */
  ack(node: number): boolean {
    if (!this.wanted || this.acked[node] === 1) return false;
    this.acked[node] = 1;
    this.ackCount++;
    if (this.ackCount !== this.need) return false;
    this.armedAt = performance.now();
    return true;
  }

  /** A node's subscriber connection dropped: its subscription is gone until it is confirmed again. */
  lost(node: number): void {
    if (this.acked[node] !== 1) return;
    this.acked[node] = 0;
    this.ackCount--;
    if (this.ackCount < this.need) this.armedAt = Infinity;
  }
}
