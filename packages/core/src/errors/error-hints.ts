import type { NodeOutcome } from './node-outcome.js';

/**
 * The words of the error messages: each node's outcome, the fix a failure names, and how the
 * errors print. Kept apart from the error classes, which only assemble them.
 */

/** Each node's outcome, with the real cause of a failure: `127.0.0.1:6390=error (ECONNREFUSED 127.0.0.1:6390)`. */
export function describeNodes(nodes: readonly NodeOutcome[]): string {
  return nodes
    .map(
      (n) =>
        `${n.node}=${n.status}${n.error !== undefined && (n.status === 'error' || n.status === 'timeout') ? ` (${n.error.split('\n', 1)[0]})` : ''}`,
    )
    .join(', ');
}

/**
 * What `util.inspect` (and so `console.log` and Nest's Logger, e.g. for a failed `@Cron` job) prints
 * for the errors that report the state of the nodes rather than a bug: one line, `Name: message`.
 * The message already names the resources, each node's outcome and the fix; a stack of library
 * frames and a dump of the outcomes every few seconds of an outage would bury it. `err.stack` and
 * the fields stay available.
 */
export function oneLine(this: Error): string {
  return `${this.name}: ${this.message}`;
}

/** Which option of the API in use makes an acquisition wait longer, named by the hint of `LockNotAcquiredError`. */
export type WaitOption =
  /** The core: `acquire` / `using` options `timeoutMs` and `retry`. */
  | 'timeoutMs'
  /** `@WithLock` / `@LockRoute` and the Nest lock service's locked calls: the `wait` option. */
  | 'wait';

/** The hint of a LockNotAcquiredError: how long it waited and which option to raise. */
export function waitHint(option: WaitOption, waitedMs: number | undefined): string {
  const waited = waitedMs === undefined ? '' : `It waited ${Math.round(waitedMs)} ms. `;
  return option === 'wait'
    ? `${waited}To wait longer, raise the wait option (in ms, e.g. { wait: 5_000 }), or treat it as "busy".`
    : `${waited}To wait longer, pass a larger timeoutMs (e.g. { timeoutMs: 5_000 }) or retry: { retries } in the acquire options, or treat it as "busy".`;
}

/**
 * The Redis error code of a reply: its first word (`WRONGPASS`, `NOPERM`, `CROSSSLOT`…), or
 * undefined for a client-side error (refused connection, TLS, timeout). Codes are matched whole,
 * never as substrings: "CROSSSLOT" contains "SSL".
 */
export function replyCode(error: string): string | undefined {
  const first = error.split(/\s/, 1)[0]!;
  if (!/^[A-Z]{2,}$/.test(first)) return undefined;
  // Node's system errors (ECONNREFUSED, ENOTFOUND…) look alike; Redis' codes that start with E are these two.
  if (first.startsWith('E') && first !== 'ERR' && first !== 'EXECABORT') return undefined;
  return first;
}

/**
 * Whether a Redis error reply is an ACL refusal: `NOPERM`, or, inside a script, Redis 7's
 * "ERR ... can't run this command ..." (its code is ERR there).
 */
export function isPermissionDenied(error: string): boolean {
  const code = replyCode(error);
  return code === 'NOPERM' || (code !== undefined && /can't run this command/.test(error));
}

/** Node's TLS failures: an OpenSSL/Node certificate code or their wording, matched as whole words. */
const TLS_FAILURE = /\b(certificate|self[- ]signed|SSL|TLS)\b|^(UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_)/i;

/**
 * The fix a QuorumUnavailableError names. Refused credentials or ACL permissions look
 * like "node down" otherwise; Redis' own error codes (never the password) tell them apart.
 */
export function quorumFix(nodes: readonly NodeOutcome[]): string {
  const codeOf = (error: string): string | undefined => {
    const code = replyCode(error);
    if (code === 'WRONGPASS' || code === 'NOAUTH') return code;
    return isPermissionDenied(error) ? 'NOPERM' : undefined;
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
  const restarted = failed.find((n) => n.error!.includes('the restart rule'));
  if (restarted) {
    return `${restarted.node} restarted without durable persistence and sits out until the largest TTL in use has passed (the restart rule, docs/operations.md): wait (an acquisition whose timeoutMs outlasts the window waits it out), or run the nodes with appendonly yes and appendfsync always.`;
  }
  const replied = failed.find((n) => replyCode(n.error!) !== undefined);
  if (replied) {
    return `${replied.node} is up but answered with the Redis error ${replyCode(replied.error!)}: the command was refused, not lost; see the node's error above.`;
  }
  return 'Check that a majority of the configured nodes are up and reachable.';
}
