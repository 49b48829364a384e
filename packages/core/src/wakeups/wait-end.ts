/*
 * How one wait of a ReleaseNotifier (release-notifier.ts) ends, whatever ended it (a notice, its
 * poll, an abort, close): it leaves its channels' queues and its end is recorded. Plain functions
 * apart from the class, which keeps the wait's start; every wait ends through these two.
 */
import type { ChannelSet } from './channel-set.js';
import { schedulePoll, type Channel, type Entry, type WaiterState, type WakeReason } from './notice-channel.js';
import type { NotifierStats } from './notifier-types.js';

/**
 * Records that a wait of the acquisition `state` on `channels` ended with `reason` (`turn`: its
 * process' turn), counts it in `stats`, and lets channels with no waiter left linger in `set`.
 */
export function finishWait(
  stats: NotifierStats,
  set: ChannelSet,
  state: WaiterState,
  channels: readonly Channel[],
  reason: WakeReason,
  turn = false,
): WakeReason {
  const now = performance.now();
  state.lastReturnAt = now;
  state.turn = turn;
  stats[reason]++;
  for (const c of channels) if (c.queue.length === 0) c.idleSince = now;
  set.scheduleSweep();
  return reason;
}

/** Takes `entry` out of the queue of each of its channels. */
export function dequeue(entry: Entry): void {
  for (const c of entry.channels) {
    const i = c.queue.indexOf(entry);
    if (i < 0) continue;
    c.queue.splice(i, 1);
    // The new head takes over the full poll rate (and so the queue's safety net).
    const head = c.queue[0];
    if (i === 0 && head) schedulePoll(head, head.pollMs, performance.now());
  }
}
