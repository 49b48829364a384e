import { RedlockArgumentError, type RetryOptions } from '@redlock-nest/core';
import { DEFAULT_REDLOCK_OPTIONS, checkKeyPrefix, checkMaxHoldMs, checkRetry } from '@redlock-nest/core/internal';
import type { SecureContextOptions } from 'node:tls';

/** Credentials of etcd's own authentication (`etcdctl user add`); a token is fetched and renewed. */
export interface EtcdAuthOptions {
  readonly username: string;
  readonly password: string;
}

/**
 * Options of {@link EtcdLocks}.
 *
 * @example
 * ```ts
 * const locks = new EtcdLocks({
 *   hosts: ['https://etcd-a:2379', 'https://etcd-b:2379', 'https://etcd-c:2379'],
 *   tls: { ca: readFileSync('ca.pem') },
 *   auth: { username: 'locks', password: process.env.ETCD_PASSWORD! },
 * });
 * ```
 */
export interface EtcdLocksOptions {
  /** Client URLs of the cluster's members (`http://host:2379` or `https://...`); every member, so a dead one is skipped. */
  readonly hosts: readonly string[];
  /** Prefix of every key written. Separate tenants with separate prefixes. Default `'redlock/'`. */
  readonly keyPrefix?: string;
  /**
   * Longest one request to one member may take before the next member is tried (the
   * acquisition's own deadline still bounds the whole). Default 1000: above an election
   * timeout's worth of a slow fsync, below a typical lock TTL.
   */
  readonly requestTimeoutMs?: number;
  /** TLS options for `https://` hosts (`ca`, `cert`, `key`, ...), as Node's `tls.connect` takes them. */
  readonly tls?: SecureContextOptions & { readonly servername?: string; readonly rejectUnauthorized?: boolean };
  /** etcd authentication (user and password); leave out when auth is off. */
  readonly auth?: EtcdAuthOptions;
  /**
   * How long an acquisition without `timeoutMs` waits, as a retry policy's budget
   * (`retries × (delayMs + jitterMs)`, the most the Redis `Redlock` waits with it); etcd itself
   * never polls: waiters are woken by the deletion of the key ahead of them.
   * `false`: one attempt. Default: the core's default retry (about 4 s).
   */
  readonly retry?: RetryOptions | false;
  /** Default cap on how long `using()` keeps a lock alive. Default: unbounded. */
  readonly maxHoldMs?: number;
  /** Clock drift allowance as a fraction of the TTL. Default: the core's (0.01). */
  readonly driftFactor?: number;
  /** Receives warnings. Default: `console.warn`. Never receives passwords or lease ids. */
  readonly onWarning?: (message: string) => void;
}

/** Options after defaults were merged: the only shape the rest of the package reads. */
export interface ResolvedEtcdOptions {
  readonly hosts: readonly URL[];
  readonly keyPrefix: string;
  readonly requestTimeoutMs: number;
  readonly tls: EtcdLocksOptions['tls'];
  readonly auth: EtcdAuthOptions | undefined;
  /** Default wait budget (ms) of an acquisition without `timeoutMs`; 0 means one attempt. */
  readonly waitBudgetMs: number;
  readonly maxHoldMs: number;
  readonly driftFactor: number;
  readonly driftConstantMs: number;
  readonly onWarning: (message: string) => void;
}

/** The defaults that are the etcd engine's own; everything else comes from the core's `DEFAULT_REDLOCK_OPTIONS`. */
export const DEFAULT_ETCD_OPTIONS = Object.freeze({ keyPrefix: 'redlock/', requestTimeoutMs: 1_000 });

function fail(message: string): never {
  throw new RedlockArgumentError(`EtcdLocks options${message}`);
}

function checkHost(host: unknown, i: number): URL {
  let url: URL | undefined;
  try {
    url = typeof host === 'string' ? new URL(host) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.port) {
    fail(`.hosts[${i}] must be a member's client URL with its port, like 'http://127.0.0.1:2379', got ${JSON.stringify(host)}.`);
  }
  if (url.username || url.password) fail(`.hosts[${i}] carries credentials: pass them as { auth: { username, password } } instead.`);
  return url;
}

/** The wait budget a retry policy stands for: as long as the Redis Redlock would keep retrying with it. */
export function waitBudgetOf(retry: RetryOptions | false | undefined, fallback: number): number {
  if (retry === false) return 0;
  if (retry === undefined) return fallback;
  const d = DEFAULT_REDLOCK_OPTIONS.retry || { retries: 0, delayMs: 0, jitterMs: 0 };
  const retries = retry.retries ?? d.retries;
  return retries * ((retry.delayMs ?? d.delayMs) + (retry.jitterMs ?? d.jitterMs));
}

/**
 * Validates the options and merges the defaults; every error names the fix.
 *
 * @example
 * ```ts
 * resolveEtcdOptions({ hosts: ['http://127.0.0.1:2379'] }).keyPrefix; // 'redlock/'
 * ```
 */
export function resolveEtcdOptions(options: unknown): ResolvedEtcdOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedlockArgumentError("EtcdLocks needs options: new EtcdLocks({ hosts: ['http://127.0.0.1:2379'] }).");
  }
  const o = options as EtcdLocksOptions;
  if (!Array.isArray(o.hosts) || o.hosts.length === 0) {
    fail(
      ".hosts must list the client URL of at least one etcd member, like ['http://etcd-a:2379', 'http://etcd-b:2379', 'http://etcd-c:2379'].",
    );
  }
  const hosts = o.hosts.map(checkHost);
  const seen = new Set(hosts.map((h) => h.origin));
  if (seen.size !== hosts.length) fail('.hosts lists a member twice: list each member once.');
  if (o.keyPrefix !== undefined) checkKeyPrefix(o.keyPrefix, 'EtcdLocks options.keyPrefix');
  if (o.requestTimeoutMs !== undefined && (!Number.isInteger(o.requestTimeoutMs) || o.requestTimeoutMs < 1)) {
    fail(`.requestTimeoutMs must be a whole number of ms ≥ 1, got ${JSON.stringify(o.requestTimeoutMs)}.`);
  }
  if (o.retry !== undefined) checkRetry(o.retry, 'EtcdLocks options.retry');
  if (o.maxHoldMs !== undefined) checkMaxHoldMs(o.maxHoldMs, 'EtcdLocks options.maxHoldMs');
  if (o.driftFactor !== undefined && (typeof o.driftFactor !== 'number' || !(o.driftFactor >= 0 && o.driftFactor < 1))) {
    fail(`.driftFactor must be a number from 0 to below 1, got ${JSON.stringify(o.driftFactor)}.`);
  }
  const auth = o.auth as Partial<EtcdAuthOptions> | null | undefined;
  if (
    auth !== undefined &&
    (auth === null || typeof auth.username !== 'string' || typeof auth.password !== 'string' || auth.username === '')
  ) {
    fail('.auth must be { username, password } with non-empty strings.');
  }
  if (o.onWarning !== undefined && typeof o.onWarning !== 'function') fail('.onWarning must be a function.');
  const d = DEFAULT_REDLOCK_OPTIONS;
  const defaultBudget = waitBudgetOf(d.retry, 0);
  return {
    hosts,
    keyPrefix: o.keyPrefix ?? DEFAULT_ETCD_OPTIONS.keyPrefix,
    requestTimeoutMs: o.requestTimeoutMs ?? DEFAULT_ETCD_OPTIONS.requestTimeoutMs,
    tls: o.tls,
    auth: o.auth,
    waitBudgetMs: waitBudgetOf(o.retry, defaultBudget),
    maxHoldMs: o.maxHoldMs ?? d.maxHoldMs,
    driftFactor: o.driftFactor ?? d.driftFactor,
    driftConstantMs: d.driftConstantMs,
    onWarning: o.onWarning ?? ((message: string) => console.warn(`[redlock-nest/etcd] ${message}`)),
  };
}
