import { ServerResponse } from 'node:http';

/** The Node response under an Express response (itself) or a Fastify reply (`reply.raw`). */
export function rawResponse(response: unknown): ServerResponse | undefined {
  // An Express response is the Node response: asked first, by its prototype chain (reading a
  // property of an Express response is a slow lookup: Express swaps its prototype per request).
  if (response instanceof ServerResponse) return response;
  // Any other emitter standing for a Node response.
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
  return responseWatch(response)?.onClose(listener) ?? (() => undefined);
}

/**
 * Calls `listener` once the response body has been fully written ('finish') or the client went
 * away ('close'), whichever comes first. A response this package cannot watch counts as done.
 */
export function onResponseDone(response: unknown, listener: () => void): () => void {
  const watch = responseWatch(response);
  if (watch) return watch.onDone(listener);
  queueMicrotask(listener);
  return () => undefined;
}

/**
 * This package's view of one response. A locked request watches its response up to three times
 * (the guard's wait, the hold before the handler starts, the interceptor after it); one 'finish'
 * and one 'close' listener per response serve them all, and stopping a watch only forgets its
 * entry, instead of adding and removing emitter listeners each time on every request. It also
 * remembers whether those events happened, so later watches need not read the response's own
 * state again (each read of an Express response, whose prototype Express swaps per request, is
 * a slow property lookup). The entries live as long as the response.
 */
export class ResponseWatch {
  /** In the order they were added; a fired or stopped entry is cleared. */
  private readonly entries: Array<{ readonly onFinish: boolean; readonly listener: () => void } | undefined> = [];
  private finished: boolean;
  private closed: boolean;

  constructor(readonly raw: ServerResponse) {
    this.finished = raw.writableFinished;
    this.closed = raw.closed;
    // `on`, not `once`: each event comes once per response anyway, and `once` wraps every listener.
    raw.on('finish', () => this.fire(true));
    raw.on('close', () => this.fire(false));
  }

  /** Calls `listener` once the client went away or the response is done ('close'); returns the stopper. */
  onClose(listener: () => void): () => void {
    if (this.closed) {
      queueMicrotask(listener);
      return () => undefined;
    }
    return this.add(false, listener);
  }

  /** Calls `listener` once the body has been fully written ('finish') or 'close'; returns the stopper. */
  onDone(listener: () => void): () => void {
    if (this.finished || this.closed) {
      queueMicrotask(listener);
      return () => undefined;
    }
    return this.add(true, listener);
  }

  /** True once something started writing the response (headers sent, or the body ended). */
  started(): boolean {
    return this.raw.headersSent || this.raw.writableEnded;
  }

  private add(onFinish: boolean, listener: () => void): () => void {
    const i = this.entries.push({ onFinish, listener }) - 1;
    return () => {
      this.entries[i] = undefined;
    };
  }

  private fire(finish: boolean): void {
    if (finish) this.finished = true;
    else this.closed = true;
    for (let i = 0; i < this.entries.length; i++) {
      const entry = this.entries[i];
      if (!entry || (finish && !entry.onFinish)) continue;
      this.entries[i] = undefined;
      entry.listener();
    }
  }
}

const watches = new WeakMap<ServerResponse, ResponseWatch>();

/** The watch of `response` (an Express response or a Fastify reply); `undefined` when it has no Node response to watch. */
export function responseWatch(response: unknown): ResponseWatch | undefined {
  const raw = rawResponse(response);
  if (!raw) return undefined;
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
