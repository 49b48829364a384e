import type { ServerResponse } from 'node:http';

/** The Node response under an Express response (itself) or a Fastify reply (`reply.raw`). */
export function rawResponse(response: unknown): ServerResponse | undefined {
  // An Express response is the Node response: asked first, as reading a `raw` it lacks walks its
  // whole prototype chain, and this runs several times on every locked request.
  if (typeof (response as ServerResponse | undefined)?.once === 'function') return response as ServerResponse;
  const raw = (response as { raw?: unknown } | undefined)?.raw;
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
  return watchOf(raw).add(false, listener);
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
  return watchOf(raw).add(true, listener);
}

/**
 * This package's listeners on one response. A locked request watches its response up to three
 * times (the guard's wait, the hold before the handler starts, the interceptor after it); one
 * 'finish' and one 'close' listener per response serve them all, and stopping a watch only
 * forgets its entry, instead of adding and removing emitter listeners each time on every request.
 * The entries live as long as the response.
 */
class ResponseWatch {
  /** In the order they were added; a fired or stopped entry is cleared. */
  private readonly entries: Array<{ readonly onFinish: boolean; readonly listener: () => void } | undefined> = [];

  constructor(raw: ServerResponse) {
    raw.once('finish', () => this.fire(true));
    raw.once('close', () => this.fire(false));
  }

  /** `onFinish`: also fire on 'finish' (else on 'close' only). Returns the stopper. */
  add(onFinish: boolean, listener: () => void): () => void {
    const i = this.entries.push({ onFinish, listener }) - 1;
    return () => {
      this.entries[i] = undefined;
    };
  }

  private fire(finish: boolean): void {
    for (let i = 0; i < this.entries.length; i++) {
      const entry = this.entries[i];
      if (!entry || (finish && !entry.onFinish)) continue;
      this.entries[i] = undefined;
      entry.listener();
    }
  }
}

const watches = new WeakMap<ServerResponse, ResponseWatch>();

function watchOf(raw: ServerResponse): ResponseWatch {
  let watch = watches.get(raw);
  if (!watch) {
    watch = new ResponseWatch(raw);
    watches.set(raw, watch);
  }
  return watch;
}

/** True once something started writing the response (headers sent, or the body ended). */
export function responseStarted(response: unknown): boolean {
  const raw = rawResponse(response);
  return raw !== undefined && (raw.headersSent || raw.writableEnded);
}
