import type { LockEngine, RedlockEventMap, RedlockEventName } from '@redlock-nest/core';

/** What happened, in the dashboard's words. */
export type TimelineEventType =
  'acquired' | 'released' | 'extended' | 'extend-failed' | 'lost' | 'contention' | 'quorum-unavailable' | 'failed' | 'force-released';

/** One entry of the timeline. */
export interface TimelineEvent {
  /** Wall-clock time, epoch ms. */
  readonly at: number;
  readonly type: TimelineEventType;
  readonly resources: readonly string[];
  /** `read`, `write` or `semaphore`; absent for a plain lock. */
  readonly primitive?: string;
  /** One short line: a duration, a reason, an error class. */
  readonly detail?: string;
}

/** The timeline as the data endpoint returns it. */
export interface TimelineSnapshot {
  /** Newest first. */
  readonly events: readonly TimelineEvent[];
  /** Acquisitions per second over the last complete seconds (up to 10) since listening began. */
  readonly acquisitionsPerSecond: number;
  /** When listening began (epoch ms): events before it are not known. Absent while not listening. */
  readonly since?: number;
}

type Mapper<E extends RedlockEventName> = (e: RedlockEventMap[E]) => Omit<TimelineEvent, 'at' | 'resources' | 'primitive'> | undefined;

const ms = (n: number): string => `${Math.round(n)} ms`;

/** Which events the timeline shows, and how. `acquire` (start) is left out: `acquired` or `failure` follows it. */
const MAPPERS: { readonly [E in RedlockEventName]?: Mapper<E> } = {
  acquired: (e) => ({ type: 'acquired', detail: `${ms(e.durationMs)}${e.attempts > 1 ? `, ${e.attempts} attempts` : ''}` }),
  release: (e) => ({ type: 'released', detail: `held ${ms(e.heldMs)}` }),
  extend: (e) => (e.ok ? { type: 'extended', detail: `ttl ${ms(e.ttlMs)}` } : { type: 'extend-failed', detail: e.error ?? 'failed' }),
  lost: (e) => ({ type: 'lost', detail: e.reason }),
  wait: (e) => ({ type: 'contention', detail: `attempt ${e.attempt}` }),
  failure: (e) => ({ type: e.error === 'QuorumUnavailableError' ? 'quorum-unavailable' : 'failed', detail: e.error }),
  forceRelease: (e) => ({ type: 'force-released', detail: e.reason }),
};

/** Seconds the acquisition rate is averaged over. */
const RATE_WINDOW = 10;

/**
 * The recent lock events of one engine, in a ring buffer: O(1) per event, bounded memory.
 * It listens only while a page is open (`touch()` on each request) and stops after `idleMs`
 * without one, so a closed dashboard adds nothing to the lock path: an engine with no
 * listener does not even build event payloads.
 */
export class EventTimeline {
  private readonly ring: Array<TimelineEvent | undefined>;
  private next = 0;
  private stored = 0;
  private offs: Array<() => void> = [];
  private since: number | undefined;
  private lastTouch = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Acquisitions per wall-clock second, indexed by second modulo the window. */
  private readonly counts = new Uint32Array(RATE_WINDOW);
  private readonly seconds = new Float64Array(RATE_WINDOW).fill(-1);

  constructor(
    private readonly engine: LockEngine,
    capacity: number,
    private readonly idleMs: number,
  ) {
    this.ring = new Array<TimelineEvent | undefined>(capacity).fill(undefined);
  }

  /** A page asked for data: listen (if not yet), and keep listening for `idleMs` more. */
  touch(): void {
    this.lastTouch = Date.now();
    if (this.since !== undefined) return;
    this.since = this.lastTouch;
    for (const name of Object.keys(MAPPERS) as RedlockEventName[]) {
      this.offs.push(this.engine.on(name, (e: RedlockEventMap[typeof name]) => this.record(name, e)));
    }
    this.idleTimer = setInterval(() => {
      if (Date.now() - this.lastTouch >= this.idleMs) this.stop();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** Stops listening; the events kept stay until the next `touch()` starts a new period. */
  stop(): void {
    for (const off of this.offs) off();
    this.offs = [];
    this.since = undefined;
    clearInterval(this.idleTimer);
    this.idleTimer = undefined;
  }

  /** Whether the timeline is listening to the engine now. */
  get listening(): boolean {
    return this.since !== undefined;
  }

  snapshot(): TimelineSnapshot {
    const events: TimelineEvent[] = [];
    for (let i = 1; i <= this.stored; i++) events.push(this.ring[(this.next - i + this.ring.length) % this.ring.length]!);
    return { events, acquisitionsPerSecond: this.rate(), ...(this.since !== undefined ? { since: this.since } : {}) };
  }

  private record<E extends RedlockEventName>(name: E, e: RedlockEventMap[E]): void {
    const mapped = (MAPPERS[name] as Mapper<E>)(e);
    if (!mapped) return;
    const at = Date.now();
    const primitive = (e as { primitive?: string }).primitive;
    const resources = (e as { resources: readonly string[] }).resources;
    this.ring[this.next] = { at, resources, ...(primitive ? { primitive } : {}), ...mapped };
    this.next = (this.next + 1) % this.ring.length;
    this.stored = Math.min(this.stored + 1, this.ring.length);
    if (name === 'acquired') {
      const second = Math.floor(at / 1000);
      const i = second % RATE_WINDOW;
      if (this.seconds[i] !== second) {
        this.seconds[i] = second;
        this.counts[i] = 0;
      }
      this.counts[i]!++;
    }
  }

  /** Mean over the complete seconds of the window that fall in the listening period. */
  private rate(): number {
    if (this.since === undefined) return 0;
    const now = Math.floor(Date.now() / 1000);
    const first = Math.max(now - RATE_WINDOW, Math.floor(this.since / 1000));
    let total = 0;
    for (let s = first; s < now; s++) if (this.seconds[s % RATE_WINDOW] === s) total += this.counts[s % RATE_WINDOW]!;
    const span = now - first;
    return span > 0 ? Math.round((total / span) * 100) / 100 : 0;
  }
}
