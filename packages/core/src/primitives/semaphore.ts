/**
 * Semaphores on the quorum: at most N holders of a resource at once. N permits are N slots,
 * each a Redlock mutex key; a holder owns one slot on a quorum of nodes. Every slot is then a
 * mutex with the Redlock guarantee, so at most N holders are valid at any moment, tolerating
 * the same failures as a mutex (a minority of nodes down, paused or restarted under the
 * restart rule). See docs/primitives.md for why the simpler counting design does not give that.
 */
import { randomInt } from 'node:crypto';
import { RedlockArgumentError } from '../errors/errors.js';
import { newOwnerToken } from '../lock/owner-token.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { LockOperations } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { LockContext } from '../lock/lock-context.js';
import type { PrimitiveAttempt, PrimitiveKind } from './primitive-attempt.js';
import type { ContentionHints } from '../rounds/arbiter-round.js';
import type { RoundResult } from '../rounds/round.js';
import { releasePartialHolds, releaseQuietlyOnNode } from '../scripts/release.js';
import { parseSemaphoreReply, semaphoreAcquireOnNode } from '../scripts/semaphore.js';

/**
 * The slot keys of a semaphore with `permits` permits: `<prefix>semaphore:<resource>:<i>`,
 * hash-tagged on Redis Cluster nodes (`semaphore:{<resource>}:<i>`), so the script that scans
 * them runs in the resource's one cluster slot.
 */
export function semaphoreKeys(names: KeyNames, resource: string, permits: number): string[] {
  const base = names.key('semaphore', resource);
  return Array.from({ length: permits }, (_, i) => `${base}:${i}`);
}

function refuseFence(): Promise<never> {
  return Promise.reject(
    new RedlockArgumentError('A semaphore permit has no fencing token: up to N holders run at once. Use a lock to order writes.'),
  );
}

/**
 * Keeps the slot granted by the most nodes (ties: the lowest slot); nodes that granted
 * another slot count as `held` (they are freed at once). Exported for tests.
 * @internal
 */
export function keepOneSlot(round: RoundResult<string[]>): { round: RoundResult<string[]>; slot: number | undefined; others: number[] } {
  const votes = new Map<number, number>();
  round.values.forEach((v, i) => {
    if (round.outcomes[i]!.status === 'ok' && v) votes.set(Number(v[0]), (votes.get(Number(v[0])) ?? 0) + 1);
  });
  let slot: number | undefined;
  for (const [s, n] of votes) if (slot === undefined || n > votes.get(slot)! || (n === votes.get(slot)! && s < slot)) slot = s;
  const others: number[] = [];
  let ok = 0;
  const outcomes: NodeOutcome[] = round.outcomes.map((o, i) => {
    if (o.status !== 'ok') return o;
    if (Number(round.values[i]![0]) === slot) {
      ok++;
      return o;
    }
    others.push(i);
    return { node: o.node, status: 'held' };
  });
  const values = round.values.map((v, i) => (outcomes[i]!.status === 'ok' ? v : undefined));
  return { round: { outcomes, values, ok, sentAt: round.sentAt }, slot, others };
}

/**
 * One permit of the semaphore `resource` with `permits` permits.
 * @internal
 */
export function semaphoreKind(host: LockContext, resource: string, permits: number): PrimitiveKind {
  const slotKeys = semaphoreKeys(host.keyNames, resource, permits);
  const ops: LockOperations = { ...host.ops, fence: refuseFence };
  // Waiters listen on every slot's channel: the arbiter's notice alone wakes one on each (see ReleaseNotifier.preferNode).
  const hints: ContentionHints = {
    usable: host.contention.usable,
    chose: (_key, node) => {
      for (const key of slotKeys) host.contention.chose(key, node);
    },
  };
  let attempts = 0;
  return {
    label: 'semaphore',
    resources: [resource],
    waitKeys: slotKeys,
    fenceKeys: undefined,
    ops,
    start: (acquisitionToken, ttlMs): PrimitiveAttempt => {
      const attempt = ++attempts;
      // A retry means the semaphore was full: scan at once instead of trying one slot first.
      const tryFirstSlot = attempt === 1;
      // Under contention the key's arbiter is asked first, then the others for the SAME slot (see
      // arbiter-round.ts): contenders asking every node at once got different slots from different
      // nodes, none reached a quorum of one slot, and with a minority of nodes paused each held its
      // partial slots until they timed out, then all retried into the same split (a livelock). Every
      // third attempt asks all nodes, as for the mutex: an arbiter that missed a release (its slots
      // stale until their TTL) must not block waiters that a majority would grant.
      const arbitrated = attempt % 3 !== 0 && (attempt > 1 || host.contended(slotKeys[0]!));
      // A token per attempt. A failed attempt frees the grants that reach it late, and such a free
      // can be written after the next attempt's commands on that node: under the acquisition's one
      // token it would delete the retry's grant of the same slot, and the retry would count a node
      // it no longer holds (two holders of one slot). Under its own token it can only free its own.
      const token = tryFirstSlot ? acquisitionToken : newOwnerToken();
      // Every node scans from the same random slot: nodes in the same state grant the same slot.
      const first = randomInt(permits);
      let kept: number | undefined;
      // Set once the attempt failed: nothing granted from then on is kept.
      let failed = false;
      // Late grants seen before the round was settled (their replies can be read in the same tick).
      let early: Array<[number, number]> | undefined = [];
      // Slots this attempt does not keep were never a permit (no quorum held them): freed without a
      // release notice, which would wake every waiting process for nothing (only a holder's release wakes).
      const free = (index: number, slot: number): void => {
        releaseQuietlyOnNode(host.nodes[index]!, [slotKeys[slot]!], token).catch(() => undefined);
      };
      // The round is decided once one slot has a quorum, or no slot can still reach one.
      const votes = new Map<number, number>();
      let answered = 0;
      const decided = (_index: number, outcome: NodeOutcome, value: readonly string[] | undefined): boolean => {
        answered++;
        let best = 0;
        if (outcome.status === 'ok' && value) votes.set(Number(value[0]), (votes.get(Number(value[0])) ?? 0) + 1);
        for (const n of votes.values()) best = Math.max(best, n);
        return best >= host.quorum || best + (host.nodes.length - answered) < host.quorum;
      };
      return {
        token,
        send: (node) => semaphoreAcquireOnNode(node, slotKeys, token, ttlMs, first, tryFirstSlot ? 'try-first' : 'scan'),
        ...(arbitrated
          ? {
              arbiter: {
                key: slotKeys[0]!,
                hints,
                follow: (granted: readonly string[] | undefined) => {
                  const slot = Number(granted?.[0] ?? first);
                  return (node: LockNode) => semaphoreAcquireOnNode(node, slotKeys, token, ttlMs, slot, 'only');
                },
              },
            }
          : {}),
        decided,
        parse: parseSemaphoreReply,
        settle: (raw) => {
          const { round, slot, others } = keepOneSlot(raw);
          kept = round.ok >= host.quorum ? slot : undefined;
          for (const i of others) free(i, Number(raw.values[i]![0]));
          for (const [i, s] of early ?? []) if (kept !== undefined && s !== kept) free(i, s);
          early = undefined;
          return round;
        },
        // A late grant of the kept slot is part of the lock; any other is freed, and so is every
        // late grant of a failed attempt: releasePartial may have reached the node before the
        // slot scan that followed a refused SET NX there (the round ended before its reply).
        late: (index, outcome, value) => {
          if (outcome.status !== 'ok' || !value) return;
          const slot = Number(value[0]);
          if (early) early.push([index, slot]);
          else if (failed || kept === undefined || slot !== kept) free(index, slot);
        },
        lockKeys: () => [slotKeys[kept!]!],
        releasePartial: (outcomes) => {
          failed = true;
          return releasePartialHolds(host.nodes, outcomes, slotKeys, token, releaseQuietlyOnNode);
        },
      };
    },
  };
}
