import type { IncomingMessage } from 'node:http';
import { b64, prefixEnd, unb64 } from './keys.js';
import type { EtcdTransport } from './http-transport.js';

/**
 * One watch per queue per process, shared by every local waiter of that queue: etcd's lock recipe
 * (each waiter watches the deletion of the key ahead of it) without one stream per waiter. A
 * deletion wakes only the waiter that watched that key (a permit waiter: only once its count of
 * keys ahead drops below its permits), so there is no thundering herd, and 2,000 waiters on one
 * key cost one stream, not 2,000.
 */

/** A local waiter, as the watch sees it. */
export interface QueueWaiter {
  /** Create revision of the waiter's key. */
  readonly revision: bigint;
  /** Holders allowed at once (1, or a semaphore's permits). */
  readonly slots: number;
  /** The key whose deletion may end the wait (locks: the nearest blocker ahead, etcd's recipe). */
  watchKey: string | undefined;
  /** Permits: keys ahead as of `readAt`, when known; unknown means every deletion ahead wakes. */
  ahead: number | undefined;
  /** The revision the above was read at: only deletions after it count. */
  readAt: bigint;
  /** Its turn may have come (or the count must be read again, after a reconnect). */
  wake(): void;
}

interface WatchEvent {
  readonly type?: string;
  readonly kv?: { readonly key?: string; readonly mod_revision?: string };
  readonly prev_kv?: { readonly key?: string; readonly create_revision?: string };
}
interface WatchMessage {
  readonly result?: {
    readonly header?: { readonly revision?: string };
    readonly created?: boolean;
    readonly canceled?: boolean;
    readonly compact_revision?: string;
    readonly events?: readonly WatchEvent[];
  };
  readonly error?: unknown;
}

export class QueueWatch {
  readonly waiters = new Set<QueueWaiter>();
  /** Keys this process holds in the queue, and what to do when one is deleted under it. */
  readonly held = new Map<string, () => void>();
  private stream: { response: IncomingMessage; abort: () => void; host: number } | undefined;
  private created: Promise<bigint> | undefined;
  /** Whether a stream has been delivering events (to the waiters registered then) since its creation. */
  private delivering = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly transport: EtcdTransport,
    private readonly prefix: string,
    private readonly timeoutMs: number,
    private readonly onIdle: () => void,
  ) {}

  /**
   * Resolves once the watch is established, with the first revision whose deletions it delivers
   * (0 once closed).
   */
  ready(): Promise<bigint> {
    this.created ??= this.open();
    return this.created;
  }

  /**
   * Whether events may already have been dispatched before a waiter registering now: the stream
   * is up. Such a waiter must read its position after registering, not trust an earlier read
   * (a deletion right after that read may have gone by before it was listening).
   */
  get live(): boolean {
    return this.delivering;
  }

  /** Removes a waiter; the watch closes with its last waiter. */
  remove(waiter: QueueWaiter): void {
    this.waiters.delete(waiter);
    if (this.waiters.size === 0) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.probeTimer);
    this.stream?.abort();
    this.stream = undefined;
    this.onIdle();
  }

  /** Opens the stream; on failure tries the next member until it is closed. */
  private async open(): Promise<bigint> {
    for (;;) {
      if (this.closed) return 0n;
      try {
        return await this.connect();
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  private async connect(): Promise<bigint> {
    const request = { create_request: { key: b64(this.prefix), range_end: prefixEnd(this.prefix), prev_kv: true, filters: ['NOPUT'] } };
    const stream = await this.transport.stream('/v3/watch', request, this.timeoutMs);
    if (this.closed) {
      stream.abort();
      return 0n;
    }
    this.stream = stream;
    const since = await new Promise<bigint>((resolve, reject) => {
      let buffer = '';
      let established = false;
      stream.response.setEncoding('utf8');
      stream.response.on('data', (chunk: string) => {
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (!line) continue;
          const message = JSON.parse(line) as WatchMessage;
          if (message.error !== undefined || message.result?.canceled) {
            stream.abort();
            continue;
          }
          if (message.result?.created && !established) {
            established = true;
            this.delivering = true;
            resolve(BigInt(message.result.header?.revision ?? '0') + 1n);
          }
          for (const event of message.result?.events ?? []) this.onEvent(event);
        }
      });
      const ended = (): void => {
        if (!established) reject(new Error('watch closed before it was created'));
        else this.reconnect(stream);
      };
      stream.response.once('end', ended);
      stream.response.once('error', ended);
      stream.response.once('close', ended);
    });
    this.scheduleProbe(stream);
    return since;
  }

  /**
   * The stream ended (its member died, lost its leader, or was cut off): open it again elsewhere,
   * then have every waiter read its count again (deletions in between were not seen).
   */
  private reconnect(stream: { abort: () => void; host: number }): void {
    if (this.closed || this.stream !== stream) return;
    this.stream = undefined;
    clearTimeout(this.probeTimer);
    this.transport.avoid(stream.host);
    this.created = this.open().then((since) => {
      for (const w of [...this.waiters]) w.wake();
      return since;
    });
  }

  /**
   * A member paused (SIGSTOP) keeps its socket open and sends nothing: every `timeoutMs`, ask
   * the stream's member for a linearizable read; no answer with a leader means reconnect.
   */
  private scheduleProbe(stream: { abort: () => void; host: number }): void {
    this.probeTimer = setTimeout(() => {
      const range = { key: b64(this.prefix), range_end: prefixEnd(this.prefix), count_only: true, limit: '1' };
      this.transport.probe(stream.host, '/v3/kv/range', range, this.timeoutMs).then(
        () => {
          if (!this.closed && this.stream === stream) this.scheduleProbe(stream);
        },
        () => {
          if (this.stream !== stream) return;
          stream.abort();
          this.reconnect(stream);
        },
      );
    }, this.timeoutMs);
    this.probeTimer.unref();
  }

  private onEvent(event: WatchEvent): void {
    if (event.type !== 'DELETE') return;
    const key = unb64(event.prev_kv?.key ?? event.kv?.key);
    this.held.get(key)?.();
    const created = BigInt(event.prev_kv?.create_revision ?? '0');
    const at = BigInt(event.kv?.mod_revision ?? '0');
    const queued = key.startsWith(`${this.prefix}q/`);
    for (const w of this.waiters) {
      if (at <= w.readAt) continue;
      if (w.watchKey !== undefined) {
        if (key === w.watchKey) w.wake();
        continue;
      }
      // A permit waiter: any queue key ahead of it that leaves brings its turn nearer.
      if (!queued || created >= w.revision) continue;
      if (w.ahead === undefined) w.wake();
      else if (--w.ahead < w.slots) w.wake();
    }
  }
}
