/*
 * What arrives on a ReleaseNotifier's subscriber connections (nodes/node-subscriber.ts) and what it
 * does to the channels: a release notice may wake a waiter, a turn wakes this process' oldest
 * addressed waiter, an acknowledgement arms a channel, a lost connection disarms the channels it
 * carried. Apart from release-notifier.ts, which owns the waits: this is the other side of the same
 * channels, driven by the nodes instead of by the acquisitions.
 */
import type { SubscriberEvents } from '../nodes/node-subscriber.js';
import type { ChannelSet } from './channel-set.js';
import { covers, deliverNotice, type NoticeRules } from './notice-channel.js';
import type { AddressedWakeups } from './notifier-types.js';
import type { WakeChannel } from './wake-channel.js';

/** The subscriber events of one ReleaseNotifier; every node's subscriber reports to the same instance. */
export class SubscriptionEvents implements SubscriberEvents {
  constructor(
    private readonly channels: ChannelSet,
    /** This process' wake-up channel, with addressed wake-ups. */
    private readonly wake: WakeChannel | undefined,
    private readonly addressed: AddressedWakeups | undefined,
    /** Nodes that must confirm a channel before it counts as armed (see ReleaseNotifierOptions.quorum). */
    private readonly need: number,
    private readonly isDown: ((node: number) => boolean) | undefined,
    /** What delivering a notice reads (see deliverNotice), shared with the notifier. */
    private readonly rules: NoticeRules,
  ) {}

  /** Our process' turn for `key` came from node `node` (addressed wake-ups). */
  private onTurn(node: number, key: string): void {
    const c = this.channels.get(key);
    if (c) c.queued = false;
    // The oldest waiter of this process takes the turn; the others stay in line behind it.
    const head = c?.queue.find((entry) => entry.addressed);
    if (head) {
      head.resolve('notice', true);
      return;
    }
    // Nobody here waits for it any more: the next process gets it. A waiter between two attempts sees it as pending.
    this.addressed!.pass(node, key);
    if (c) {
      c.pendingAt = performance.now();
      c.pendingOwn = false;
    }
  }

  onMessage(node: number, name: string, message: string): void {
    if (this.wake && name === this.wake.name) {
      this.onTurn(node, message);
      return;
    }
    const c = this.channels.get(name);
    if (c) deliverNotice(c, node, this.rules);
  }

  onAck(node: number, name: string): void {
    if (this.wake && name === this.wake.name) {
      if (!this.wake.ack(node)) return;
      // As below: addressed waiters that arrived unarmed repeat their attempt once, now that their turn can reach them.
      for (const c of this.channels.values()) {
        for (const entry of [...c.queue]) if (entry.addressed) entry.resolve('armed');
      }
      return;
    }
    const c = this.channels.get(name);
    if (!c || c.acked[node] === 1) return;
    c.acked[node] = 1;
    c.ackCount++;
    if (c.armedAt === Infinity && covers(c, this.need, this.isDown)) {
      c.armedAt = performance.now();
      // Waiters that arrived unarmed (or lost their arming to a reconnect) may have missed
      // a release: each repeats its attempt once, now under the subscription.
      for (const entry of [...c.queue]) {
        if (!entry.addressed && entry.channels.every((ch) => ch.armedAt !== Infinity)) entry.resolve('armed');
      }
    }
  }

  onLost(node: number): void {
    this.wake?.lost(node);
    for (const c of this.channels.values()) {
      if (c.acked[node] !== 1) continue;
      c.acked[node] = 0;
      c.ackCount--;
      if (c.ackCount < this.need) c.armedAt = Infinity;
    }
  }
}
