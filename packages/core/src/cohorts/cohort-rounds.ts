import { arbiterOf } from '../rounds/arbiter-round.js';
import { isClusterClient } from '../nodes/cluster-client.js';
import { fenceHeldLock, type FencingContext } from '../fencing/fencing.js';
import { LockCohorts } from './lock-cohort.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { ResolvedCohort } from '../options/options.js';
import type { ReleaseNotifier } from '../wakeups/release-notifier.js';
import type { LockContext } from '../lock/lock-context.js';
import { runRound } from '../rounds/round.js';
import { extendOnNode, parseExtendReply } from '../scripts/extend.js';
import { waitersOnNode, type WakeQueue } from '../scripts/wake-queue.js';

/**
 * The one owner-checked extend round of a hand-off whose lock has little validity left
 * (lock-cohort.ts): the new monotonic end of validity, drift subtracted, or undefined when
 * fewer than a quorum extended it in time (the hand-off then releases and the waiter acquires).
 * @internal
 */
export async function extendHeldKeys(
  host: LockContext,
  keys: readonly string[],
  value: string,
  ttlMs: number,
): Promise<number | undefined> {
  const start = performance.now();
  host.restarts?.noteTtl(ttlMs);
  const round = await runRound(host.nodes, (node) => host.counted(node, extendOnNode(node, keys, value, ttlMs)), parseExtendReply, {
    quorum: host.quorum,
    timeoutMs: host.nodeTimeout(ttlMs),
    early: true,
  });
  const validUntil = start + ttlMs - host.drift(ttlMs);
  return round.ok >= host.quorum && validUntil > performance.now() ? validUntil : undefined;
}

/**
 * How many other processes wait for `key`: their subscribers listen to the key's release notices
 * (`PUBSUB NUMSUB` on one node, minus our own subscription there). A subscription lingers a
 * moment after its last wait, so this may count a process that just stopped waiting: the cohort
 * then gives the lock back one run early, and its waiters let one release too many pass (their
 * poll ends that wait). Unknown (no plain node with generic commands, an error, a timeout) counts as 1.
 * So does a node whose client cannot open a subscriber (no `duplicate()`): waiters that poll
 * instead of subscribing are invisible to `PUBSUB NUMSUB`, and a cohort that believed nobody else
 * waits would keep the lock from them run after run.
 * @internal
 */
export async function othersSubscribed(
  nodes: readonly LockNode[],
  key: string,
  timeoutMs: number,
  ours: (node: number) => boolean,
): Promise<number> {
  const i = nodes.findIndex((n) => !isClusterClient(n.client) && typeof n.client.call === 'function');
  const node = nodes[i];
  if (!node || typeof node.client.duplicate !== 'function') return 1;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  try {
    const reply = await Promise.race([node.call((client) => client.call!('PUBSUB', 'NUMSUB', key)), timeout]);
    const others = (Array.isArray(reply) ? Number(reply[1]) : NaN) - (ours(i) ? 1 : 0);
    return Number.isNaN(others) ? 1 : Math.max(0, others);
  } catch {
    return 1;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How many other processes are queued for `key` on its arbiter (addressed wake-ups, see
 * scripts/wake-queue.ts). Unknown (no arbiter, an error, a timeout) counts as 1.
 * @internal
 */
export async function othersQueued(nodes: readonly LockNode[], queue: WakeQueue, key: string, timeoutMs: number): Promise<number> {
  const node = nodes[arbiterOf(nodes, key, timeoutMs)];
  if (!node) return 1;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<number>((resolve) => (timer = setTimeout(() => resolve(1), timeoutMs)));
  try {
    return await Promise.race([waitersOnNode(node, queue, key), timeout]);
  } catch {
    return 1;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The cohorts of a Redlock, wired to its rounds (the extend and fencing rounds of a hand-off)
 * and to its release notices (whether other processes wait; moving waiters to a hand-off).
 * `byNotice` false: this instance's waiters do not wait by release notice (a subclass replaced
 * its wait), so neither may the others', and `PUBSUB NUMSUB` cannot see them: a cohort past its
 * bounds always gives way.
 * @internal
 */
export function newCohorts(
  host: LockContext,
  bounds: ResolvedCohort,
  fencing: () => FencingContext,
  notices: Pick<ReleaseNotifier, 'subscribedOn' | 'wakeForHandoff'>,
  byNotice: boolean,
  queue: () => WakeQueue | undefined,
): LockCohorts {
  return new LockCohorts(
    {
      active: host.active,
      ops: host.ops,
      extendKeys: (keys, value, ttlMs) => extendHeldKeys(host, keys, value, ttlMs),
      fence: (view, fenceKeys) => fenceHeldLock(fencing(), view, fenceKeys),
      othersWaiting: (key) => {
        const q = queue();
        return q
          ? othersQueued(host.nodes, q, key, host.options.nodeTimeoutMs)
          : byNotice
            ? othersSubscribed(host.nodes, key, host.options.nodeTimeoutMs, (node) => notices.subscribedOn(key, node))
            : Promise.resolve(1);
      },
      gather: (keys) => notices.wakeForHandoff(keys),
    },
    bounds,
  );
}
