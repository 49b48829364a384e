import type { ServerResponse } from 'node:http';

/** The Node response under an Express response (itself) or a Fastify reply (`reply.raw`). */
export function rawResponse(response: unknown): ServerResponse | undefined {
  const raw = (response as { raw?: unknown } | undefined)?.raw ?? response;
  return raw && typeof (raw as ServerResponse).once === 'function' ? (raw as ServerResponse) : undefined;
}

/** Sets a header on an Express response or a Fastify reply (Fastify only sends headers set through the reply). */
export function setResponseHeader(response: unknown, name: string, value: string): void {
  const r = response as { raw?: unknown; header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown };
  if (r.raw !== undefined && typeof r.header === 'function') r.header(name, value);
  else if (typeof r.setHeader === 'function') r.setHeader(name, value);
}

/** Calls `listener` once the response is finished or the client went away. */
export function onResponseClose(response: unknown, listener: () => void): () => void {
  const raw = rawResponse(response);
  if (!raw) return () => undefined;
  if (raw.closed) {
    queueMicrotask(listener);
    return () => undefined;
  }
  raw.once('close', listener);
  return () => raw.off('close', listener);
}
