/*
 * The data shapes around a Lock (lock.ts): what makes one, what releasing it did, where it stands
 * and what printing it shows. Apart from the class, which keeps the behaviour. LockOperations stays
 * in lock.ts: it names the class, and a type here importing lock.ts would close an import cycle.
 */
import type { NodeOutcome } from '../errors/node-outcome.js';

/** What a release did on each node. Releasing never throws for an expired lock. */
export interface ReleaseResult {
  /** Nodes on which our key was still present and was deleted. */
  readonly released: number;
  /** Per-node outcomes (`ok`, `absent` when already expired, `error`, `timeout`). */
  readonly nodes: readonly NodeOutcome[];
  /**
   * Present (true) when the lock went to a waiter of the same Redlock instead of the nodes
   * (lock cohorting, see docs/cohorting.md): `released` is 0 and `nodes` empty, the keys stay
   * held under the new holder, and this Lock is inert from now on.
   */
  readonly handedOff?: true;
}

/** What a Lock is made of (see `createLock`, for engines outside the core). */
export interface LockInit {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly value: string;
  readonly expiresAtMono: number;
  readonly fencingTokens?: ReadonlyMap<string, bigint>;
  /** What each node answered on the winning attempt. */
  readonly nodes?: readonly NodeOutcome[];
}

/** Where a lock stands: `held` until released, `lost` once known lost while held (its `signal` aborted). */
export type LockState = 'held' | 'released' | 'lost';

/**
 * What `JSON.stringify(lock)` and `console.log(lock)` show: everything a log line or an HTTP
 * response may carry, never the owner token.
 */
export interface LockJSON {
  readonly resources: readonly string[];
  /** Wall-clock time (integer epoch ms) at which the lock's validity ends. */
  readonly expiration: number;
  /** The fencing token of the first resource, as a decimal string (JSON has no bigint); absent when unfenced. */
  readonly fencingToken?: string;
  /** Every resource's fencing token as a decimal string, when several resources were fenced together. */
  readonly fencingTokens?: Readonly<Record<string, string>>;
  readonly state: LockState;
}
