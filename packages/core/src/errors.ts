import { inspect } from 'node:util';
import type { NodeOutcome } from './node-outcome.js';

/**
 * Base class of every error this library throws. `name` is always the concrete
 * class name, so logs and `instanceof` checks agree.
 *
 * @example
 * ```ts
 * try {
 *   await redlock.acquire('order:42', 5_000);
 * } catch (err) {
 *   if (err instanceof LockNotAcquiredError) return reply.status(409);
 *   if (err instanceof QuorumUnavailableError) return reply.status(503);
 *   throw err;
 * }
 * ```
 */
export class RedlockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Details common to errors raised by an acquisition attempt. */
export interface AcquireFailureDetails {
  /** The resources that were requested (without key prefix). */
  readonly resources: readonly string[];
  /** How many attempts were made before giving up. */
  readonly attempts: number;
  /** What each node answered on the last attempt. Never contains owner tokens. */
  readonly nodes: readonly NodeOutcome[];
}

/** Each node's outcome, with the real cause of a failure: `127.0.0.1:6390=error (ECONNREFUSED 127.0.0.1:6390)`. */
function describeNodes(nodes: readonly NodeOutcome[]): string {
  return nodes
    .map((n) => `${n.node}=${n.status}${n.error !== undefined && (n.status === 'error' || n.status === 'timeout') ? ` (${n.error.split('\n', 1)[0]})` : ''}`)
    .join(', ');
}

/**
 * What `util.inspect` (and so `console.log` and Nest's Logger, e.g. for a failed `@Cron` job) prints
 * for the errors that report the state of the nodes rather than a bug: one line, `Name: message`.
 * The message already names the resources, each node's outcome and the fix; a stack of library
 * frames and a dump of the outcomes every few seconds of an outage would bury it. `err.stack` and
 * the fields stay available.
 */
function oneLine(this: Error): string {
  return `${this.name}: ${this.message}`;
}

/** Which option of the API in use makes an acquisition wait longer, named by the hint of {@link LockNotAcquiredError}. */
export type WaitOption =
  /** The core: `acquire` / `using` options `timeoutMs` and `retry`. */
  | 'timeoutMs'
  /** `@WithLock` / `@LockRoute` and the Nest lock service's locked calls: the `wait` option. */
  | 'wait';

function waitHint(option: WaitOption, waitedMs: number | undefined): string {
  const waited = waitedMs === undefined ? '' : `It waited ${Math.round(waitedMs)} ms. `;
  return option === 'wait'
    ? `${waited}To wait longer, raise the wait option (in ms, e.g. { wait: 5_000 }), or treat it as "busy".`
    : `${waited}To wait longer, pass a larger timeoutMs (e.g. { timeoutMs: 5_000 }) or retry: { retries } in the acquire options, or treat it as "busy".`;
}

/**
 * The lock is held by someone else: enough nodes answered, but a majority of them
 * already held the resource for another owner. Retrying later can succeed.
 *
 * `retryAfterMs` estimates when enough of the holder's keys expire for a majority to be free
 * again, from the TTLs the nodes reported (undefined when unknown). An HTTP layer sends it as
 * `Retry-After`.
 */
export class LockNotAcquiredError extends RedlockError implements AcquireFailureDetails {
  readonly resources: readonly string[];
  readonly attempts: number;
  readonly nodes: readonly NodeOutcome[];
  /** Milliseconds until the current holder's lock expires, when known. */
  readonly retryAfterMs: number | undefined;
  /** How long the acquisition tried, from its start to giving up (ms), when known. */
  readonly waitedMs: number | undefined;
  /** The option the hint names (`timeoutMs` for the core, `wait` for the Nest decorators). */
  readonly waitOption: WaitOption;
  readonly #details: LockNotAcquiredDetails;

  constructor(details: LockNotAcquiredDetails) {
    const why = details.reason ?? 'it is held by another owner';
    const waitOption = details.waitOption ?? 'timeoutMs';
    super(
      `Could not lock ${JSON.stringify(details.resources)}: ${why} ` +
        `(${details.attempts} attempt(s); nodes: ${describeNodes(details.nodes)}). ` +
        waitHint(waitOption, details.waitedMs),
    );
    this.#details = details;
    this.resources = details.resources;
    this.attempts = details.attempts;
    this.nodes = details.nodes;
    this.retryAfterMs = details.retryAfterMs;
    this.waitedMs = details.waitedMs;
    this.waitOption = waitOption;
  }

  /**
   * The same failure, its hint naming `option`: the Nest layer names its `wait` option.
   * @internal
   */
  forWaitOption(option: WaitOption): LockNotAcquiredError {
    return option === this.waitOption ? this : new LockNotAcquiredError({ ...this.#details, waitOption: option });
  }

  /** One line in logs (see {@link QuorumUnavailableError}). */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** What a {@link LockNotAcquiredError} is built from. */
export interface LockNotAcquiredDetails extends AcquireFailureDetails {
  readonly retryAfterMs?: number | undefined;
  readonly reason?: string;
  /** From the start of the acquisition to giving up, in ms. */
  readonly waitedMs?: number;
  /** The option the hint tells the caller to raise. Default `'timeoutMs'` (the core's). */
  readonly waitOption?: WaitOption;
}

/**
 * The Redis error code of a reply: its first word (`WRONGPASS`, `NOPERM`, `CROSSSLOT`…), or
 * undefined for a client-side error (refused connection, TLS, timeout). Codes are matched whole,
 * never as substrings: "CROSSSLOT" contains "SSL".
 */
function replyCode(error: string): string | undefined {
  const first = error.split(/\s/, 1)[0]!;
  if (!/^[A-Z]{2,}$/.test(first)) return undefined;
  // Node's system errors (ECONNREFUSED, ENOTFOUND…) look alike; Redis' codes that start with E are these two.
  if (first.startsWith('E') && first !== 'ERR' && first !== 'EXECABORT') return undefined;
  return first;
}

/** Node's TLS failures: an OpenSSL/Node certificate code or their wording, matched as whole words. */
const TLS_FAILURE = /\b(certificate|self[- ]signed|SSL|TLS)\b|^(UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_)/i;

/**
 * The fix a QuorumUnavailableError names. Refused credentials or ACL permissions look
 * like "node down" otherwise; Redis' own error codes (never the password) tell them apart.
 */
function quorumFix(nodes: readonly NodeOutcome[]): string {
  // Inside a script, Redis 7 reports an ACL refusal as "ERR ... can't run this command ...".
  const codeOf = (error: string): string | undefined => {
    const code = replyCode(error);
    if (code === 'WRONGPASS' || code === 'NOAUTH' || code === 'NOPERM') return code;
    return code !== undefined && /can't run this command/.test(error) ? 'NOPERM' : undefined;
  };
  const failed = nodes.filter((n) => n.error !== undefined);
  const refused = failed.find((n) => codeOf(n.error!) !== undefined);
  if (refused) {
    const code = codeOf(refused.error!);
    return code === 'NOPERM'
      ? `${refused.node} refused a command (NOPERM): grant the ACL user the commands, keys and channels in docs/security.md.`
      : `${refused.node} refused the credentials (${code}): check the username and password in the node's URL or options.`;
  }
  const tls = failed.find((n) => replyCode(n.error!) === undefined && TLS_FAILURE.test(n.error!));
  if (tls) {
    return `${tls.node} failed the TLS handshake (certificate not verified): give the client the CA (tls: { ca }) or set NODE_EXTRA_CA_CERTS.`;
  }
  const replied = failed.find((n) => replyCode(n.error!) !== undefined);
  if (replied) {
    return `${replied.node} is up but answered with the Redis error ${replyCode(replied.error!)}: the command was refused, not lost; see the node's error above.`;
  }
  return 'Check that a majority of the configured nodes are up and reachable.';
}

/**
 * Too many nodes failed or did not answer in time for a majority to be possible.
 * This is an infrastructure problem (Redis down, paused, unreachable, wrong password),
 * not contention: an HTTP layer maps it to 503.
 */
export class QuorumUnavailableError extends RedlockError implements AcquireFailureDetails {
  readonly resources: readonly string[];
  readonly attempts: number;
  readonly nodes: readonly NodeOutcome[];
  /** Nodes needed for a majority. */
  readonly quorum: number;

  constructor(details: AcquireFailureDetails & { quorum: number; reason?: string; cause?: unknown }) {
    const failed = details.nodes.filter((n) => n.status === 'error' || n.status === 'timeout').length;
    super(
      `Could not reach a quorum of ${details.quorum}/${details.nodes.length} Redis nodes for ` +
        `${JSON.stringify(details.resources)}: ${details.reason ?? `${failed} node(s) failed or timed out`} ` +
        `(nodes: ${describeNodes(details.nodes)}). ${quorumFix(details.nodes)}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.resources = details.resources;
    this.attempts = details.attempts;
    this.nodes = details.nodes;
    this.quorum = details.quorum;
  }

  /**
   * One line in logs: `QuorumUnavailableError: Could not reach a quorum … (nodes: a=error (ECONNREFUSED …), …). Check …`.
   * During an outage a failing job logs this line, not a stack and a dump of its fields.
   */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** Why a lock is known to be lost. */
export type LockLostReason =
  /** Its validity ran out before it was extended. */
  | 'expired'
  /** An extension found that a majority of nodes no longer hold our token. */
  | 'not-owner'
  /** The watchdog stopped extending because `maxHoldMs` was reached. */
  | 'max-hold-exceeded'
  /** The lock was released (or its Redlock closed) before this operation. */
  | 'released';

/**
 * The lock is no longer held: extending it failed, its validity ran out, or it was
 * already released. This is the `reason` of `lock.signal` when the signal aborts.
 */
export class LockLostError extends RedlockError {
  readonly resources: readonly string[];
  readonly reason: LockLostReason;
  readonly nodes: readonly NodeOutcome[];

  constructor(details: {
    resources: readonly string[];
    reason: LockLostReason;
    nodes?: readonly NodeOutcome[];
    cause?: unknown;
  }) {
    const text: Record<LockLostReason, string> = {
      expired: 'its validity ran out before it was extended (use a longer ttl or using(), which auto-extends)',
      'not-owner': 'a majority of nodes no longer hold it (it expired and may now be held by someone else)',
      'max-hold-exceeded': 'it was held longer than maxHoldMs, so the watchdog stopped extending it',
      released: 'it was already released; acquire a new lock instead',
    };
    super(
      `Lock on ${JSON.stringify(details.resources)} is lost: ${text[details.reason]}.`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.resources = details.resources;
    this.reason = details.reason;
    this.nodes = details.nodes ?? [];
  }

  /** One line in logs (see {@link QuorumUnavailableError}). */
  [inspect.custom](): string {
    return oneLine.call(this);
  }
}

/** An argument or option is invalid. The message names the offending value and the fix. */
export class RedlockArgumentError extends RedlockError {}

/** The `Redlock` instance was closed; create a new one. */
export class RedlockClosedError extends RedlockError {
  constructor() {
    super('This Redlock instance is closed. Create a new Redlock (closing is final).');
  }
}

/** The configured nodes are not independent masters (a replica, or the same server twice). */
export class NodeIndependenceError extends RedlockError {
  readonly problems: readonly string[];
  /**
   * True when two configured nodes are the same server (same `run_id`). That is always an
   * error, also where a replica is only warned about (the Nest module's `independenceCheck: 'warn'`).
   */
  readonly sameServer: boolean;

  constructor(problems: readonly string[], details: { sameServer?: boolean } = {}) {
    super(
      `Redlock nodes must be independent masters: ${problems.join('; ')}. ` +
        'Configure N separate Redis servers with no replication between them (no replicas, no Sentinel failover).',
    );
    this.problems = problems;
    this.sameServer = details.sameServer ?? false;
  }
}

/**
 * A write to a fenced resource carried a token lower than (or equal to) one the
 * resource has already seen: the writer's lock was lost and someone newer wrote.
 */
export class StaleFencingTokenError extends RedlockError {
  readonly resource: string;
  readonly token: bigint;
  readonly currentToken: bigint | undefined;

  constructor(details: { resource: string; token: bigint; currentToken?: bigint | undefined }) {
    super(
      `Rejected a write to "${details.resource}" with fencing token ${details.token}: ` +
        (details.currentToken === undefined
          ? 'a newer token has already written there'
          : `the resource has already seen token ${details.currentToken}`) +
        '. The lock was lost (paused or expired holder); do not retry this write with the old lock.',
    );
    this.resource = details.resource;
    this.token = details.token;
    this.currentToken = details.currentToken;
  }
}
