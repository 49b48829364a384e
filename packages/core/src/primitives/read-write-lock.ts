/**
 * Read-write locks on the quorum: many readers or one writer per resource, phase-fair.
 *
 * A write lock IS the resource's mutex key (`<prefix>lock:<resource>`, hash-tagged on Redis
 * Cluster nodes as every other key of the resource, holding the owner
 * token): a plain lock and a write lock on the same resource exclude each other, and a
 * write lock is extended and fenced exactly like a plain one. Readers hold the
 * same key with a marker no owner token can equal, plus a lease each in a ZSET; so a plain
 * lock excludes readers too (it is a write lock that takes no part in the phases). The phases
 * (scripts/read-write.ts): a waiting writer stops new readers, the readers who waited during a
 * write phase go in together after it, before the next writer. See docs/primitives.md for the
 * safety argument and the policy.
 */
import { isClusterClient } from '../nodes/cluster-client.js';
import { RedlockArgumentError } from '../errors/errors.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { Lock } from '../lock/lock.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import type { LockContext } from '../lock/lock-context.js';
import type { PrimitiveAttempt, PrimitiveKind } from './primitive-attempt.js';
import { extendOnNode } from '../scripts/extend.js';
import { releasePartialHolds } from '../scripts/release.js';
import { parseReadWriteReply, readAcquireOnNode, writeAcquireOnNode, type ReadWriteKeys } from '../scripts/read-write.js';
import {
  abandonReadOnNode,
  abandonWriteOnNode,
  readExtendOnNode,
  readReleaseOnNode,
  readYieldOnNode,
  writeReleaseOnNode,
  writeYieldOnNode,
} from '../scripts/read-write-release.js';

/** `'read'`: shared with other readers; `'write'`: exclusive. Neither side starves the other (phase-fair). */
export type LockMode = 'read' | 'write';

/** The per-node extend and release of a lock that is not a plain mutex key. @internal */
export interface NodeScripts {
  readonly extend: (node: LockNode, keys: readonly string[], token: string, ttlMs: number) => Promise<unknown>;
  readonly release: (node: LockNode, keys: readonly string[], token: string) => Promise<unknown>;
}

const scriptsByLock = new WeakMap<Lock, NodeScripts>();

/** How a lock's keys are extended and released on a node, when not as a plain mutex (a read or write lock). @internal */
export function nodeScriptsOf(lock: Lock): NodeScripts | undefined {
  return scriptsByLock.get(lock);
}

/**
 * The keys of a resource's read-write lock: its lock key (the one plain locks use), the readers,
 * the waiting writers, the readers queued behind a waiting writer, and the batch of readers whose
 * turn comes after the current write phase. On Redis Cluster nodes all carry the resource's hash
 * tag, so one script reads and writes them in one slot.
 */
export function readWriteKeys(names: KeyNames, resource: string): ReadWriteKeys {
  return {
    lock: names.lock(resource),
    readers: names.key('rw-readers', resource),
    writers: names.key('rw-writers', resource),
    queued: names.key('rw-queued', resource),
    batch: names.key('rw-batch', resource),
  };
}

/**
 * Whether `channel` is a read-write lock's batch channel, with this key prefix: a notice there
 * opens a read phase, which every waiting reader of the process may enter, so it wakes them all
 * (other channels wake one waiter per process, see release-notifier.ts).
 * @internal
 */
export function readPhaseChannels(keyPrefix: string): (channel: string) => boolean {
  const start = `${keyPrefix}rw-batch:`;
  return (channel) => channel.startsWith(start);
}

function refuseFence(): Promise<never> {
  return Promise.reject(
    new RedlockArgumentError(
      'A read lock has no fencing token of its own: readers do not write. Acquire it with { mode: "read", fencing: true } ' +
        'to learn the token of the last write lock, or use { mode: "write" } to write.',
    ),
  );
}

/**
 * The read or write lock on `resource`. `waits`: the acquisition retries; its refused attempts
 * then register it as waiting (a writer blocks new readers, a reader keeps its place in the read
 * phase after the current writer), each registration a lease of `ttlMs`, renewed by every attempt.
 * @internal
 */
export function readWriteKind(host: LockContext, mode: LockMode, resource: string, fencing: boolean, waits: boolean): PrimitiveKind {
  const keys = readWriteKeys(host.keyNames, resource);
  const fenceKey = fencing ? host.keyNames.fence(resource) : undefined;
  const reading = mode === 'read';
  const withdraw = reading ? abandonReadOnNode : abandonWriteOnNode;
  const scripts: NodeScripts = reading
    ? {
        extend: (node, _keys, token, ttlMs) => readExtendOnNode(node, keys, token, ttlMs),
        release: (node, _keys, token) => readReleaseOnNode(node, keys, token),
      }
    : { extend: extendOnNode, release: (node, _keys, token) => writeReleaseOnNode(node, keys, token) };
  const abandon = (token: string, nodes: Iterable<number>): void => {
    for (const i of nodes) withdraw(host.nodes[i]!, keys, token).catch(() => undefined);
  };
  // One owner token per acquisition (the same across its attempts): the one to withdraw if it fails.
  let waiting: string | undefined;
  let attempts = 0;
  return {
    label: mode,
    resources: [resource],
    // Readers wake on the batch's channel (every reader of the process: a read phase opened) and on
    // the lock key; writers on the waiting writers' channel and the lock key (one writer per process).
    waitKeys: reading ? [keys.batch, keys.lock] : [keys.writers, keys.lock],
    fenceKeys: fenceKey === undefined ? undefined : [fenceKey],
    ops: reading ? { ...host.ops, fence: refuseFence } : host.ops,
    adopt: (lock) => scriptsByLock.set(lock, scripts),
    start: (token, ttlMs): PrimitiveAttempt => {
      const args = { token, ttlMs, waitLeaseMs: waits ? ttlMs : 0, waited: attempts++ > 0 && waits };
      if (waits) waiting = token;
      // Nodes that refused a won attempt registered it as waiting: withdrawn there once the attempt
      // is known to have won (late refusals too), or they would keep others out after our release.
      let won = false;
      const refused = new Set<number>();
      const refusedBy = (index: number, outcome: NodeOutcome): void => {
        if (!waits || outcome.status === 'ok' || outcome.status === 'pending') return;
        if (won) abandon(token, [index]);
        else refused.add(index);
      };
      return {
        send: (node) => (reading ? readAcquireOnNode(node, keys, fenceKey, args) : writeAcquireOnNode(node, keys, fenceKey, args)),
        parse: parseReadWriteReply,
        late: refusedBy,
        lockKeys: () => (reading ? [keys.lock, keys.readers] : [keys.lock]),
        // A waiter that retries keeps waiting where it had won, as where it was refused (see the yield scripts).
        releasePartial: (outcomes) => {
          if (!waits) {
            return reading
              ? releaseEach(host.nodes, outcomes, (node) => readReleaseOnNode(node, keys, token))
              : releasePartialHolds(host.nodes, outcomes, [keys.lock], token);
          }
          const yieldOn = reading ? readYieldOnNode : writeYieldOnNode;
          return releaseEach(host.nodes, outcomes, (node) => yieldOn(node, keys, token, ttlMs));
        },
        won: (outcomes) => {
          outcomes.forEach((o, i) => refusedBy(i, o));
          won = true;
          abandon(token, refused);
        },
      };
    },
    watch: (acquisition) => {
      acquisition.catch(() => {
        if (waiting !== undefined) abandon(waiting, host.nodes.keys());
      });
    },
  };
}

/**
 * Sends `release` to every node that may hold what a failed attempt set (not to those that
 * refused). Settles once the releases of the nodes that granted did (they answer: a round trip),
 * and those of Redis Cluster nodes: a cluster may apply a redirected or retried command after a
 * later one, and a late release of this token would undo the next attempt's grant (see
 * releasePartialHolds). So a waiter that yielded is registered on every node that answered before
 * it waits, and a write lock released meanwhile counts it (a reader joins that writer's batch).
 */
function releaseEach(
  nodes: readonly LockNode[],
  outcomes: readonly NodeOutcome[],
  release: (node: LockNode) => Promise<unknown>,
): Promise<void> {
  const awaited: Array<Promise<unknown>> = [];
  for (let i = 0; i < nodes.length; i++) {
    const status = outcomes[i]!.status;
    if (status === 'held') continue;
    const sent = release(nodes[i]!).catch(() => undefined);
    if (status === 'ok' || isClusterClient(nodes[i]!.client)) awaited.push(sent);
  }
  return Promise.all(awaited).then(() => undefined);
}
