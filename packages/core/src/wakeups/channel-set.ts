/*
 * The channels of one ReleaseNotifier (release-notifier.ts) and their subscriptions' lifetime:
 * a key's channel is subscribed on every node by its first wait, lingers after its last one (the
 * acquire loop waits again after each attempt: a resubscription per retry would lose the "armed
 * before the attempt" guarantee), and is dropped by one sweep timer for all of them.
 */
import { newChannel, type Channel } from './notice-channel.js';
import type { WakeChannel } from './wake-channel.js';

/** What a channel set does on the nodes' subscriber connections. */
export interface ChannelSubscriptions {
  /** Nodes (one subscriber connection each). */
  readonly nodes: number;
  /** Subscribes `channel` on every node. */
  want(channel: string): void;
  /** Unsubscribes `channel` on every node. */
  drop(channel: string): void;
}

export class ChannelSet {
  private readonly channels = new Map<string, Channel>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private idleWaiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly subscriptions: ChannelSubscriptions,
    /** How long a channel stays subscribed after its last waiter returned. */
    private readonly lingerMs: number,
    /** This process' wake-up channel, with addressed wake-ups: dropped with the last channel. */
    private readonly wake: WakeChannel | undefined,
    /** The arbiter node of a key (arbiter-round.ts), for a new channel. */
    private readonly arbiterOf: ((key: string) => number) | undefined,
  ) {}

  get size(): number {
    return this.channels.size;
  }

  get(name: string): Channel | undefined {
    return this.channels.get(name);
  }

  has(name: string): boolean {
    return this.channels.has(name);
  }

  values(): IterableIterator<Channel> {
    return this.channels.values();
  }

  /**
   * The channel of key `name`, subscribed (made on first use). `addressed`: the wait is woken by
   * its process' turn, so this process' wake-up channel is subscribed too.
   */
  open(name: string, addressed = false): Channel {
    let c = this.channels.get(name);
    if (!c) {
      c = newChannel(name, this.subscriptions.nodes, this.arbiterOf?.(name) ?? -1);
      this.channels.set(name, c);
    }
    if (addressed) this.wake?.want();
    // Addressed waits listen on the key's channel too: the releases of read-write locks and
    // semaphores on the same resource (and of multi-resource locks) notify there, not by turns.
    if (!c.subscribed) {
      c.subscribed = true;
      this.subscriptions.want(c.name);
    }
    return c;
  }

  /** Resolves once no channel is subscribed any more (after the linger time). */
  whenIdle(): Promise<void> {
    if (this.channels.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** One unref'd timer for all channels: drops those idle for `lingerMs`. */
  scheduleSweep(): void {
    if (this.sweepTimer || this.closed || this.channels.size === 0) return;
    this.sweepTimer = setTimeout(() => this.sweep(), this.lingerMs);
    this.sweepTimer.unref();
  }

  /** Forgets every channel (the notifier closes the connections) and returns them, for their waits to end. */
  close(): Channel[] {
    this.closed = true;
    const all = [...this.channels.values()];
    this.channels.clear();
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    this.flushIdle();
    return all;
  }

  private sweep(): void {
    this.sweepTimer = undefined;
    const now = performance.now();
    for (const c of this.channels.values()) {
      if (c.queue.length === 0 && now - c.idleSince >= this.lingerMs) {
        this.channels.delete(c.name);
        if (c.subscribed) this.subscriptions.drop(c.name);
      }
    }
    if (this.channels.size === 0) {
      this.wake?.drop((channel) => this.subscriptions.drop(channel));
      this.flushIdle();
    } else this.scheduleSweep();
  }

  private flushIdle(): void {
    const waiting = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiting) resolve();
  }
}
