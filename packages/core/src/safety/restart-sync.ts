/**
 * The fencing half of the restart rule: a node that restarted without its data lost its
 * fencing counters, so before it counts again they are raised to the largest value any
 * node that kept its data holds. Otherwise a majority of restarted nodes would hand out
 * tokens below ones already handed out, and a fenced resource would take a stale write.
 */
import type { LockNode } from '../nodes/lock-node.js';
import { escapeGlob, greater, readCounters } from '../nodes/node-commands.js';
import { raiseFenceOnNode } from '../scripts/fence-raise.js';
import type { NodeState } from './restart-state.js';

/** What {@link raiseCounters} needs of its restart rule. */
export interface CounterSyncContext {
  readonly nodes: readonly LockNode[];
  readonly states: ReadonlyMap<LockNode, NodeState>;
  /** Prefix of the lock and fencing keys (`<prefix>fence:*` are raised). */
  readonly keyPrefix: string;
  readonly onWarning: (message: string) => void;
}

/**
 * Raises the restarted node's fencing counters to the largest value any counting node
 * holds (found with SCAN), so a token handed out once it counts again is above every
 * token handed out before the restart. Retried on the next look at the node if it fails.
 * `windowOver`: its restart window has passed (every lock granted before it has expired).
 *
 * @example
 * ```ts
 * raiseCounters(node, state, { nodes, states, keyPrefix: 'redlock:', onWarning: console.warn });
 * ```
 */
export function raiseCounters(node: LockNode, state: NodeState, ctx: CounterSyncContext, windowOver = false): void {
  if (!state.needsSync || state.syncing) return;
  const sources = ctx.nodes.filter((other) => {
    if (other === node) return false;
    const s = ctx.states.get(other);
    // A node not connected now cannot be read (its counters come back with it, or never).
    const connected = other.client.status === undefined || other.client.status === 'ready';
    return s !== undefined && !s.needsSync && s.failed === undefined && !s.checking && connected;
  });
  if (sources.length === 0) {
    // Every node lost its data: no counter survives anywhere to raise it from.
    if (ctx.nodes.every((other) => other === node || (ctx.states.get(other)?.needsSync ?? true))) {
      state.needsSync = false;
      ctx.onWarning(`every node restarted without its data: fencing counters restart from their current values on ${node.label}.`);
    } else if (windowOver) {
      // The nodes that kept their counters are down or unchecked, and the window has passed: every
      // lock granted before the restart has expired, so the node may grant again. Its counters may
      // be behind: a fenced resource refuses the older tokens (fencing checked by the resource).
      state.needsSync = false;
      ctx.onWarning(
        `no node that kept its fencing counters answers: ${node.label} counts again after its restart window with the counters it has; fenced resources refuse tokens below the ones they saw.`,
      );
    }
    return;
  }
  state.syncing = true;
  const pattern = `${escapeGlob(ctx.keyPrefix)}fence:*`;
  void Promise.all(sources.map((source) => readCounters(source, pattern)))
    .then(async (counters) => {
      const highest = new Map<string, string>();
      for (const found of counters) {
        for (const [key, value] of found) {
          const current = highest.get(key);
          if (current === undefined || greater(value, current)) highest.set(key, value);
        }
      }
      const entries = [...highest];
      for (let i = 0; i < entries.length; i += 200) {
        const batch = entries.slice(i, i + 200);
        await raiseFenceOnNode(
          node,
          batch.map(([k]) => k),
          batch.map(([, v]) => v),
        );
      }
      state.needsSync = false;
    })
    .catch((err: unknown) => {
      const text = err instanceof Error ? err.message : String(err);
      if (text.startsWith('NOPERM')) {
        // Not allowed to enumerate the counters: the node counts again once its quarantine
        // is over (the lock stays safe), but its counters rely on the catch-up of later rounds.
        state.needsSync = false;
        ctx.onWarning(
          `could not raise the fencing counters of restarted node ${node.label} (${text}): grant +scan to the lock user. Until then, fencing tokens after a restart of a majority of nodes may repeat.`,
        );
        return;
      }
      if (state.syncWarned) return;
      state.syncWarned = true;
      ctx.onWarning(
        `could not raise the fencing counters of restarted node ${node.label} yet (${text}); it does not count until this succeeds.`,
      );
    })
    .finally(() => {
      state.syncing = false;
    });
}
