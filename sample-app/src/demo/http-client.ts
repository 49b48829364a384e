import { Agent, request } from 'node:http';

/** A response with its JSON body (or the raw text when it is not JSON). */
export interface HttpResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

/** A body field as text: primitives as they are, anything else as JSON (never "[object Object]"). */
export function fieldText(value: unknown, fallback = ''): string {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

/**
 * A tiny keep-alive JSON client over node:http: the load generator sends thousands of
 * requests, and a connection per request would measure TCP setup, not locking.
 */
export class HttpClient {
  private readonly agent: Agent;

  constructor(
    readonly baseUrl: string,
    maxSockets: number,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  post(path: string, body: unknown = {}): Promise<HttpResult> {
    return this.send('POST', path, body);
  }

  put(path: string, body: unknown): Promise<HttpResult> {
    return this.send('PUT', path, body);
  }

  get(path: string): Promise<HttpResult> {
    return this.send('GET', path, undefined);
  }

  close(): void {
    this.agent.destroy();
  }

  private send(method: string, path: string, body: unknown): Promise<HttpResult> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.baseUrl),
        {
          method,
          agent: this.agent,
          headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Record<string, unknown>;
            try {
              parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
            } catch {
              parsed = { text };
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
          });
        },
      );
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}

/** Milliseconds to wait before retrying, from `Retry-After` (seconds) or the body's `retryAfterMs`. */
export function retryAfterMs(result: HttpResult, fallback: number): number {
  const fromBody = result.body.retryAfterMs;
  if (typeof fromBody === 'number' && fromBody >= 0) return fromBody;
  const header = result.headers['retry-after'];
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1_000 : fallback;
}
