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

/**
 * Calls `listener` once the response body has been fully written ('finish') or the client went
 * away ('close'), whichever comes first. A response this package cannot watch counts as done.
 */
export function onResponseDone(response: unknown, listener: () => void): () => void {
  const raw = rawResponse(response);
  if (!raw || raw.writableFinished || raw.closed) {
    queueMicrotask(listener);
    return () => undefined;
  }
  const done = (): void => {
    stop();
    listener();
  };
  const stop = (): void => {
    raw.off('finish', done);
    raw.off('close', done);
  };
  raw.once('finish', done);
  raw.once('close', done);
  return stop;
}

/** True once something started writing the response (headers sent, or the body ended). */
export function responseStarted(response: unknown): boolean {
  const raw = rawResponse(response);
  return raw !== undefined && (raw.headersSent || raw.writableEnded);
}
