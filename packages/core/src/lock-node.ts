import { createHash } from 'node:crypto';
import type { ClientHandle, RedisClientLike } from './redis-client.js';

/** A Lua script and its SHA1, sent with EVALSHA and re-sent with EVAL on NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Defines a script once, at module load; the SHA is computed here, never per call. */
export function defineScript(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/**
 * One independent Redis node of a Redlock. Runs scripts by SHA (falling back to EVAL
 * when the server lost its script cache, e.g. after a restart) and connects clients
 * the library created on first use.
 */
export class LockNode {
  readonly client: RedisClientLike;
  readonly owned: boolean;
  readonly label: string;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private corked = false;

  constructor(handle: ClientHandle) {
    this.client = handle.client;
    this.owned = handle.owned;
    this.label = handle.label;
  }

  /** Connects a client this library created (or one passed in that never connected), once; a failed connect is retried on the next call. */
  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('connection closed (its Redlock was closed)'));
    // Callers arriving while our connect is under way (status 'connecting'/'connect') wait
    // for it: sending now would fail at once, as the offline queue is disabled.
    if (this.connecting) return this.connecting;
    const status = this.client.status;
    // A client passed in is connected only if it never was (lazyConnect): ioredis would start
    // that connect on the first command anyway, but fail the command (no offline queue).
    // One closed by its owner ('end') stays closed.
    if ((status !== 'wait' && !(this.owned && status === 'end')) || !this.client.connect) return Promise.resolve();
    this.connecting ??= this.client.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Runs `script` with `keys` and `args`. Rejects with the client's error. */
  async run(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    if (this.client.status !== 'ready') await this.connect();
    this.corkForTick();
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }

  /**
   * Holds this tick's writes to the node back until the tick ends, so commands issued
   * together (concurrent callers, a round's release) leave in one write. This replaces
   * ioredis' auto-pipelining, which waits for setImmediate and lets one pipeline per
   * connection be in flight: on a busy event loop that cost a single caller ~40% latency.
   */
  private corkForTick(): void {
    if (this.corked) return;
    const stream = (this.client as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork!();
    });
  }

  /** Closes a client this library created; clients passed in are left open. */
  async close(): Promise<void> {
    if (!this.owned || this.closed) return;
    this.closed = true;
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch {
        // fall through: a node that cannot QUIT is disconnected instead
      }
    }
    this.client.disconnect();
  }
}
