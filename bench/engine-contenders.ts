/**
 * The lock engines compared by `npm run bench:etcd`, behind the bench's Contender interface:
 * one Redis node, Redlock on 5 nodes (each also with `fair: true` for the contention tables,
 * as etcd's queue is FIFO by construction), and EtcdLocks on a 3-member cluster. Every waiter
 * waits as long as it takes: the benchmark measures hand-offs, not timeouts.
 */
import { Redlock, type LockEngine } from '@redlock-nest/core';
import { EtcdLocks } from '@redlock-nest/etcd';
import type { Contender } from './contender.js';

export type EngineName = 'Redis, 1 node' | 'Redis, 1 node (fair)' | 'Redlock, 5 nodes' | 'Redlock, 5 nodes (fair)' | 'etcd, 3 members';

/** Where each engine's servers are. */
export interface EngineTargets {
  readonly single: readonly string[];
  readonly five: readonly string[];
  readonly etcd: readonly string[];
}

/** The longest a contention waiter waits (far past any run). */
const WAIT_MS = 120_000;

function engineOf(name: EngineName, t: EngineTargets): LockEngine {
  const fair = name.endsWith('(fair)');
  const retry = { retries: Infinity };
  if (name.startsWith('Redis, 1 node')) return new Redlock([...t.single], { retry, fair });
  if (name.startsWith('Redlock, 5 nodes')) return new Redlock([...t.five], { retry, fair });
  return new EtcdLocks({ hosts: t.etcd });
}

export function createEngineContender(name: EngineName, targets: EngineTargets): Contender {
  const engine = engineOf(name, targets);
  return {
    name,
    acquire: (resource, ttlMs) => engine.acquire(resource, ttlMs, { timeoutMs: WAIT_MS }),
    close: () => engine.close(),
  };
}
