import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { NodeOutcome } from '@redlock-nest/core';
import type { ResolvedEtcdOptions } from './options.js';

/**
 * etcd's JSON gateway (its gRPC API over plain HTTP/1.1 under /v3/) with failover: a request goes
 * to the member that answered last; a member that refuses, times out, or has no leader is skipped
 * for the next, until the caller's deadline. Every request carries the "require leader" metadata
 * (`Grpc-Metadata-hasleader: true`, etcd's `WithRequireLeader`), so a member cut off from the
 * leader fails at once instead of answering stale or holding a stream open (etcd #7275).
 */

/** A member answered with a gRPC error that retrying elsewhere does not fix (lease not found, bad request). */
export class EtcdReplyError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'EtcdReplyError';
  }
}

/** No member answered usefully before the deadline; `outcomes` says what each one did. */
export class EtcdUnreachableError extends Error {
  constructor(
    readonly outcomes: readonly NodeOutcome[],
    /** How many requests were sent: 0 when the deadline had passed before the first (a wait ran out, not an outage). */
    readonly tried: number,
  ) {
    super(
      `No etcd member answered with a leader in time (${outcomes.map((o) => `${o.node}=${o.status}${o.error ? ` (${o.error})` : ''}`).join(', ')})`,
    );
    this.name = 'EtcdUnreachableError';
  }
}

/** A request's timeout, in whole milliseconds (its budget can be a fraction of one). */
function noAnswerWithin(timeoutMs: number): string {
  return `no answer within ${Math.ceil(timeoutMs)} ms`;
}

/** gRPC codes worth another member: UNAVAILABLE (no leader, leader changed, stopping), DEADLINE_EXCEEDED, ABORTED. */
const RETRYABLE_CODES = new Set([14, 4, 10]);
/** UNAUTHENTICATED: the auth token expired; fetch a new one. */
const UNAUTHENTICATED = 16;

/** The gateway's error body: `{ "error": "etcdserver: no leader", "code": 14, "message": ... }`. */
interface GatewayError {
  readonly error?: string;
  readonly message?: string;
  readonly code?: number;
}

/** One POST's outcome. */
type Attempt = { ok: true; body: unknown } | { ok: false; retry: boolean; status: 'error' | 'timeout'; error: string; code?: number };

export class EtcdTransport {
  /** Index of the member that answered last: requests go there first. */
  private preferred = 0;
  private readonly agents: Array<HttpAgent | HttpsAgent>;
  private token: Promise<string | undefined> | undefined;
  private closed = false;

  constructor(private readonly options: ResolvedEtcdOptions) {
    this.agents = options.hosts.map((url) =>
      url.protocol === 'https:' ? new HttpsAgent({ keepAlive: true, ...options.tls }) : new HttpAgent({ keepAlive: true }),
    );
  }

  /** `host:port` of the member that answered last. */
  get current(): string {
    return this.labels[this.preferred]!;
  }

  /** `host:port` of each member, for outcomes and errors (never credentials). */
  get labels(): string[] {
    return this.options.hosts.map((h) => h.host);
  }

  /**
   * POSTs `body` (an object, or JSON text already, such as several messages for a stream) to `path` (`/v3/kv/range` ...) until a member answers or `deadline`
   * (monotonic ms) passes. Rejects with {@link EtcdReplyError} for a definite refusal and
   * {@link EtcdUnreachableError} when no member answered in time.
   */
  async call<T>(path: string, body: unknown, deadline: number): Promise<T> {
    const outcomes = new Map<number, NodeOutcome>();
    const hosts = this.options.hosts.length;
    for (let tried = 0; ; tried++) {
      const left = deadline - performance.now();
      if (left <= 0 || this.closed) break;
      const i = (this.preferred + tried) % hosts;
      const attempt = await this.post(i, path, body, Math.min(this.options.requestTimeoutMs, left));
      if (attempt.ok) {
        this.preferred = i;
        return attempt.body as T;
      }
      if (attempt.code === UNAUTHENTICATED && this.options.auth) {
        this.token = undefined;
        continue;
      }
      if (!attempt.retry) throw new EtcdReplyError(attempt.code ?? 0, attempt.error);
      // A retry cut short by the deadline (its budget may be a fraction of a millisecond) says less
      // than the member's earlier error (a refused connection): the error stays its outcome.
      if (attempt.status !== 'timeout' || outcomes.get(i)?.status !== 'error') {
        outcomes.set(i, { node: this.labels[i]!, status: attempt.status, error: attempt.error });
      }
      // After a full round of refusals (an election under way), pause briefly before the next round.
      if ((tried + 1) % hosts === 0) await pause(Math.min(50, Math.max(0, deadline - performance.now())));
    }
    const tried = outcomes.size;
    throw new EtcdUnreachableError(
      this.labels.map((node, i) => outcomes.get(i) ?? { node, status: 'timeout', error: 'not tried before the deadline' }),
      tried,
    );
  }

  /**
   * Opens a streaming POST (a watch) on the preferred member, moving on to the next one each
   * call. Resolves with the response once its headers arrived; the caller reads and ends it.
   */
  async stream(path: string, body: unknown, timeoutMs: number): Promise<{ response: IncomingMessage; abort: () => void; host: number }> {
    const host = this.preferred;
    this.preferred = (this.preferred + 1) % this.options.hosts.length;
    const headers = await this.headers();
    return new Promise((resolve, reject) => {
      const req = this.request(host, path, headers);
      const timer = setTimeout(() => req.destroy(new Error(noAnswerWithin(timeoutMs))), timeoutMs);
      req.once('response', (response) => {
        clearTimeout(timer);
        if (response.statusCode !== 200) {
          response.resume();
          req.destroy();
          reject(new Error(`HTTP ${response.statusCode}`));
          return;
        }
        resolve({ response, abort: () => req.destroy(), host });
      });
      req.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(JSON.stringify(body));
    });
  }

  /** Marks the member a stream found dead, so the next requests start elsewhere. */
  avoid(host: number): void {
    if (this.preferred === host) this.preferred = (host + 1) % this.options.hosts.length;
  }

  /**
   * One request to one member, for probes: its body or an error, within `timeoutMs`. Sent without
   * require-leader, so a member cut off from the leader still says what it knows (its raft index).
   */
  async probe<T>(host: number, path: string, body: unknown, timeoutMs: number): Promise<T> {
    const attempt = await this.post(host, path, body, timeoutMs, false);
    if (attempt.ok) return attempt.body as T;
    throw new Error(attempt.error);
  }

  close(): void {
    this.closed = true;
    for (const agent of this.agents) agent.destroy();
  }

  private async post(i: number, path: string, body: unknown, timeoutMs: number, requireLeader = true): Promise<Attempt> {
    let headers: Record<string, string>;
    try {
      headers = await this.headers();
      if (!requireLeader) delete headers['grpc-metadata-hasleader'];
    } catch (err) {
      return { ok: false, retry: true, status: 'error', error: describe(err) };
    }
    return new Promise<Attempt>((resolve) => {
      let done = false;
      const finish = (attempt: Attempt): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(attempt);
      };
      const req = this.request(i, path, headers);
      const timer = setTimeout(() => {
        finish({ ok: false, retry: true, status: 'timeout', error: noAnswerWithin(timeoutMs) });
        req.destroy();
      }, timeoutMs);
      req.once('error', (err) => finish({ ok: false, retry: true, status: 'error', error: describe(err) }));
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('error', (err) => finish({ ok: false, retry: true, status: 'error', error: describe(err) }));
        res.once('end', () => finish(parseReply(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
      });
      req.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  }

  private request(i: number, path: string, headers: Record<string, string>) {
    const url = this.options.hosts[i]!;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return send({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path,
      agent: this.agents[i],
      headers,
      ...(url.protocol === 'https:' ? this.options.tls : {}),
    });
  }

  private async headers(): Promise<Record<string, string>> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'grpc-metadata-hasleader': 'true' };
    if (!this.options.auth) return headers;
    this.token ??= this.authenticate();
    const token = await this.token;
    if (token) headers.authorization = token;
    return headers;
  }

  /** etcd auth: POST /v3/auth/authenticate gives a token sent as `Authorization` on every request. */
  private async authenticate(): Promise<string | undefined> {
    const { username, password } = this.options.auth!;
    const attempt = await this.postRaw('/v3/auth/authenticate', { name: username, password });
    if (!attempt.ok) {
      this.token = undefined;
      throw new Error(`authentication failed: ${attempt.error}`);
    }
    return (attempt.body as { token?: string }).token;
  }

  private async postRaw(path: string, body: unknown): Promise<Attempt> {
    const headers = { 'content-type': 'application/json' };
    for (let i = 0; i < this.options.hosts.length; i++) {
      const host = (this.preferred + i) % this.options.hosts.length;
      const attempt = await new Promise<Attempt>((resolve) => {
        const req = this.request(host, path, headers);
        req.setTimeout(this.options.requestTimeoutMs, () => req.destroy(new Error('timeout')));
        req.once('error', (err) => resolve({ ok: false, retry: true, status: 'error', error: describe(err) }));
        req.once('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('end', () => resolve(parseReply(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
        });
        req.end(JSON.stringify(body));
      });
      if (attempt.ok || !attempt.retry) return attempt;
    }
    return { ok: false, retry: true, status: 'error', error: 'no member answered the authentication' };
  }
}

/** A gateway reply: the message, or the gRPC error it carries. */
function parseReply(status: number, text: string): Attempt {
  let parsed: unknown;
  try {
    // A streaming endpoint sent several messages (a batch of lease keep-alives): one per line.
    parsed = text.includes('}\n{')
      ? text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as unknown)
      : JSON.parse(text);
  } catch {
    return { ok: false, retry: true, status: 'error', error: `HTTP ${status}: ${text.slice(0, 120)}` };
  }
  if (status === 200) {
    // A streaming endpoint used for one message (lease keep-alive) wraps it in { result }.
    return { ok: true, body: parsed };
  }
  const err = parsed as GatewayError;
  const message = err.error ?? err.message ?? `HTTP ${status}`;
  const code = typeof err.code === 'number' ? err.code : undefined;
  return {
    ok: false,
    retry: code === undefined || RETRYABLE_CODES.has(code),
    status: 'error',
    error: message,
    ...(code === undefined ? {} : { code }),
  };
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return (e.code ?? e.message ?? String(err)).toString();
}

function pause(ms: number): Promise<void> {
  // Not unref'd: an acquisition waiting out an election must keep the process alive.
  return new Promise((resolve) => setTimeout(resolve, ms));
}
