/**
 * Read-write locks on the quorum: many readers or one writer per resource, writer preference.
 *
 * A write lock IS the resource's mutex key (`<prefix>lock:<resource>`, hash-tagged on Redis
 * Cluster nodes as every other key of the resource, holding the owner
 * token): a plain lock and a write lock on the same resource exclude each other, and a
 * write lock is extended, released and fenced exactly like a plain one. Readers hold the
 * same key with a marker no owner token can equal, plus a lease each in a ZSET; so a plain
 * lock excludes readers too (it is a write lock without writer preference). See
 * docs/primitives.md for the safety argument.
 */
import { isClusterClient } from './cluster-client.js';
import { RedlockArgumentError } from './errors.js';
import type { KeyNames } from './hash-slot.js';
import type { Lock, LockOperations } from './lock.js';
import type { LockNode } from './lock-node.js';
import type { NodeOutcome } from './node-outcome.js';
import type { PrimitiveAttempt, PrimitiveHost, PrimitiveKind } from './primitive-attempt.js';
import { releasePartialHolds } from './scripts/release.js';
import {
  abandonWriteOnNode,
  writeYieldOnNode,
  parseReadWriteReply,
  readAcquireOnNode,
  readExtendOnNode,
  readReleaseOnNode,
  writeAcquireOnNode,
  type ReadWriteKeys,
} from './scripts/read-write.js';

/** `'read'`: shared with other readers; `'write'`: exclusive, and waiting writers block new readers. */
export type LockMode = 'read' | 'write';

/** The per-node extend and release of a lock that is not a plain mutex key. @internal */
export interface NodeScripts {
  readonly extend: (node: LockNode, keys: readonly string[], token: string, ttlMs: number) => Promise<unknown>;
  readonly release: (node: LockNode, keys: readonly string[], token: string) => Promise<unknown>;
}

const READ_SCRIPTS: NodeScripts = Object.freeze({ extend: readExtendOnNode, release: readReleaseOnNode });
const readLocks = new WeakSet<Lock>();

/** How a lock's keys are extended and released on a node, when not as a mutex (a read lock). @internal */
export function nodeScriptsOf(lock: Lock): NodeScripts | undefined {
  return readLocks.has(lock) ? READ_SCRIPTS : undefined;
}

/**
 * The keys of a resource's read-write lock: its lock key (the one plain locks use), and the
 * readers' and waiting writers' sorted sets. On Redis Cluster nodes all three carry the
 * resource's hash tag, so one script reads and writes them in one slot.
 */
export function readWriteKeys(names: KeyNames, resource: string): ReadWriteKeys {
  return { lock: names.lock(resource), readers: names.key('rw-readers', resource), writers: names.key('rw-writers', resource) };
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
 * The read or write lock on `resource`. `waits`: the acquisition retries (a writer then
 * registers as waiting, blocking new readers, for at most `ttlMs` per attempt).
 * @internal
 */
export function readWriteKind(host: PrimitiveHost, mode: LockMode, resource: string, fencing: boolean, waits: boolean): PrimitiveKind {
  const keys = readWriteKeys(host.keyNames, resource);
  const fenceKey = fencing ? host.keyNames.fence(resource) : undefined;
  const base = {
    label: mode,
    resources: [resource],
    waitKeys: [keys.lock],
    fenceKeys: fenceKey === undefined ? undefined : [fenceKey],
  };
  if (mode === 'read') {
    const ops: LockOperations = { ...host.ops, fence: refuseFence };
    return {
      ...base,
      ops,
      adopt: (lock) => readLocks.add(lock),
      start: (token, ttlMs): PrimitiveAttempt => ({
        send: (node) => readAcquireOnNode(node, keys, fenceKey, token, ttlMs),
        parse: parseReadWriteReply,
        lockKeys: () => [keys.lock, keys.readers],
        releasePartial: (outcomes) =>
          releaseEach(host.nodes, outcomes, (node) => readReleaseOnNode(node, [keys.lock, keys.readers], token)),
      }),
    };
  }
  // One owner token per acquisition (the same across its attempts): the one to withdraw.
  let waiting: string | undefined;
  const abandon = (token: string, outcomes?: readonly NodeOutcome[]): void => {
    host.nodes.forEach((node, i) => {
      if (outcomes?.[i]?.status !== 'ok') abandonWriteOnNode(node, keys.writers, token).catch(() => undefined);
    });
  };
  return {
    ...base,
    ops: host.ops,
    start: (token, ttlMs): PrimitiveAttempt => {
      if (waits) waiting = token;
      return {
        send: (node) => writeAcquireOnNode(node, keys, fenceKey, token, ttlMs, waits ? ttlMs : 0),
        parse: parseReadWriteReply,
        lockKeys: () => [keys.lock],
        // A writer that retries keeps waiting where it had won, as where it was refused (see WRITE_YIELD_BODY).
        releasePartial: (outcomes) =>
          waits
            ? releaseEach(host.nodes, outcomes, (node) => writeYieldOnNode(node, keys, token, ttlMs))
            : releasePartialHolds(host.nodes, outcomes, [keys.lock], token),
        // Nodes that refused us keep our waiting entry (granting ones dropped it): drop it, or it
        // would keep readers out there after our release.
        won: (outcomes) => (waits && outcomes.some((o) => o.status !== 'ok') ? abandon(token, outcomes) : undefined),
      };
    },
    watch: (acquisition) => {
      acquisition.catch(() => {
        if (waiting !== undefined) abandon(waiting);
      });
    },
  };
}

/**
 * Sends `release` to every node that may hold what a failed attempt set (not to those that
 * refused). Settles once the Redis Cluster nodes' releases did: a cluster may apply a
 * redirected or retried command after a later one, and a late release of this token would
 * undo the next attempt's grant (see releasePartialHolds).
 */
function releaseEach(
  nodes: readonly LockNode[],
  outcomes: readonly NodeOutcome[],
  release: (node: LockNode) => Promise<unknown>,
): Promise<void> {
  const ordered: Array<Promise<unknown>> = [];
  for (let i = 0; i < nodes.length; i++) {
    if (outcomes[i]!.status === 'held') continue;
    const sent = release(nodes[i]!).catch(() => undefined);
    if (isClusterClient(nodes[i]!.client)) ordered.push(sent);
  }
  return Promise.all(ordered).then(() => undefined);
}
