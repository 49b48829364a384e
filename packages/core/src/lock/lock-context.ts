import type { FencingContext } from '../fencing/fencing.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { LockNode } from '../nodes/lock-node.js';
import type { ResolvedRedlockOptions } from '../options/options.js';
import type { ContentionHints } from '../rounds/arbiter-round.js';
import type { RestartRule } from '../safety/restart-rule.js';
import type { Lock, LockOperations } from './lock.js';

/**
 * What the rounds of one Redlock read: its nodes and quorum, the restart rule's gate, the
 * timeout and drift rules, fencing, contention hints, and the operations a won lock delegates
 * to. Built once by the Redlock and read-only: an attempt, a primitive or a cohort is given
 * this, never the Redlock, so the data of an acquisition goes down through the layers and
 * never back up into the façade (redlock.ts).
 * @internal
 */
export interface LockContext {
  readonly nodes: readonly LockNode[];
  /** Nodes needed for a majority: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  readonly options: ResolvedRedlockOptions;
  /** Key names: every key of a primitive shares its resource's slot on Redis Cluster nodes. */
  readonly keyNames: KeyNames;
  readonly restarts: RestartRule | undefined;
  /** The locks held now: a won attempt adds its lock, a release or a loss removes it. */
  readonly active: Set<Lock>;
  readonly ops: LockOperations;
  /** Node health for picking an arbiter, and whom to tell which one was picked (arbiter-round.ts). */
  readonly contention: ContentionHints;
  /** Whether waiters of this process listened for `key`'s releases lately: it is contended. */
  contended(key: string): boolean;
  /** A node's grant, unless the restart rule keeps that node out of quorums for now. */
  counted(node: LockNode, sent: Promise<unknown>): Promise<unknown>;
  /** The validity a lock of `ttlMs` loses to clock drift. */
  drift(ttlMs: number): number;
  /** How long an acquire round waits for a node: `nodeTimeoutMs`, capped at ttl/3. */
  nodeTimeout(ttlMs: number): number;
  fencingContext(timeoutMs: number): FencingContext;
}

/** The validity a lock of `ttlMs` loses to clock drift (the Redis distributed-locks page's rule). @internal */
export function driftOf(options: ResolvedRedlockOptions, ttlMs: number): number {
  return Math.floor(ttlMs * options.driftFactor) + options.driftConstantMs;
}

/** A node's answer counts as timed out after `nodeTimeoutMs`, capped at ttl/3 per attempt. @internal */
export function nodeTimeoutOf(options: ResolvedRedlockOptions, ttlMs: number): number {
  return Math.max(1, Math.min(options.nodeTimeoutMs, Math.floor(ttlMs / 3)));
}

/** The parts of a {@link LockContext} that are data; the rules are derived from them. @internal */
export type LockContextParts = Omit<LockContext, 'counted' | 'drift' | 'nodeTimeout' | 'fencingContext'>;

/** A frozen {@link LockContext} over `parts`. @internal */
export function createLockContext(parts: LockContextParts): LockContext {
  const { nodes, quorum, options, restarts } = parts;
  return Object.freeze({
    ...parts,
    counted: restarts
      ? (node: LockNode, sent: Promise<unknown>) => restarts.gate(node, sent)
      : (_node: LockNode, sent: Promise<unknown>) => sent,
    drift: (ttlMs: number) => driftOf(options, ttlMs),
    nodeTimeout: (ttlMs: number) => nodeTimeoutOf(options, ttlMs),
    fencingContext: (timeoutMs: number): FencingContext => ({ nodes, quorum, timeoutMs }),
  });
}
