import { LockLostError, QuorumUnavailableError, type Lock, type ReleaseResult } from '@redlock-nest/core';
import type { LockOperations } from '@redlock-nest/core/internal';
import { keepAlive, revokeLease, stillHeld, type HeldKey } from './etcd-ops.js';
import { EtcdReplyError, EtcdUnreachableError, type EtcdTransport } from './http-transport.js';

/** What a held etcd lock's operations need. */
export interface LockOpsContext {
  readonly transport: EtcdTransport;
  readonly requestTimeoutMs: number;
  drift(ttlMs: number): number;
  /** The lock's queue keys, by Lock. */
  keysOf(lock: Lock): readonly HeldKey[];
  /** Told once when a lock is released or lost (stop counting it, emit events). */
  released(lock: Lock, result: ReleaseResult, startedAt: number): void;
  lost(lock: Lock, error: LockLostError): void;
}

/** An etcd failure as the core's error of an unreachable store, naming the members. */
export function unavailable(resources: readonly string[], err: unknown, hosts: readonly string[]): QuorumUnavailableError {
  const nodes =
    err instanceof EtcdUnreachableError
      ? err.outcomes
      : hosts.map((node) => ({ node, status: 'error' as const, error: err instanceof Error ? err.message : String(err) }));
  const reason =
    err instanceof EtcdReplyError
      ? `etcd refused the request (${err.message})`
      : 'no etcd member answered with a leader in time (a majority of members down, paused or cut off)';
  return new QuorumUnavailableError({
    resources,
    attempts: 1,
    nodes,
    quorum: Math.floor(hosts.length / 2) + 1,
    reason,
    cause: err,
  });
}

/**
 * The operations of a Lock held on etcd. The owner token (`lock.value`) is the lease id:
 * - extend renews the lease (a keep-alive; etcd renews to the TTL the lease was granted with, so
 *   the new validity is the smaller of that and `ttlMs`), retried by the watchdog on any error
 *   until the lock's validity ends;
 * - release revokes the lease, which deletes every key of the lock in one revision;
 * - fence confirms the keys still exist: their create revisions are the tokens, already greater
 *   than every earlier holder's.
 */
export function lockOperations(ctx: LockOpsContext): LockOperations {
  return {
    extend: async (lock, ttlMs) => {
      const sent = performance.now();
      let ttl: number;
      try {
        const ttls = await keepAlive(ctx.transport, [lock.value], Math.max(sent + 1, lock.validUntilMono));
        ttl = ttls.get(lock.value) ?? 0;
      } catch (err) {
        throw unavailable(lock.resources, err, ctx.transport.labels);
      }
      if (ttl <= 0) throw lock.lose('not-owner');
      lock.setExpiry(sent + Math.min(ttlMs, ttl * 1000) - ctx.drift(ttlMs));
    },
    release: async (lock) => {
      const startedAt = performance.now();
      let result: ReleaseResult;
      try {
        const revoked = await revokeLease(ctx.transport, lock.value, startedAt + 2 * ctx.requestTimeoutMs);
        result = {
          released: revoked ? lock.keys.length : 0,
          nodes: [{ node: ctx.transport.current, status: revoked ? 'ok' : 'absent' }],
        };
      } catch (err) {
        // Never throws: a lease that cannot be revoked now expires by its TTL.
        const nodes = err instanceof EtcdUnreachableError ? err.outcomes : [{ node: ctx.transport.current, status: 'error' as const }];
        result = { released: 0, nodes };
      }
      ctx.released(lock, result, startedAt);
      return result;
    },
    fence: async (lock) => {
      const keys = ctx.keysOf(lock);
      let held: boolean;
      try {
        held = await stillHeld(ctx.transport, keys, Math.max(performance.now() + 1, lock.validUntilMono));
      } catch (err) {
        throw unavailable(lock.resources, err, ctx.transport.labels);
      }
      if (!held) throw lock.lose('not-owner');
      return new Map(lock.resources.map((r, i) => [r, keys[i]!.revision]));
    },
    lost: (lock, error) => ctx.lost(lock, error),
  };
}
