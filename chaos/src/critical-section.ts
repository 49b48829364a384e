import { RedisFencedStore, StaleFencingTokenError, type Lock } from '@redlock-nest/core';
import { decodeValue, encodeValue, type CycleEvent, type FaultEvent, type WriteOutcome } from './history.js';

/** A freeze the nemesis asked this worker to perform inside its next critical section. */
export interface BusyFreeze {
  readonly ms: number;
}

/** How a newer holder is waited for after a busy freeze: poll every 10 ms, at most 3 s. */
const NEWER_HOLDER_POLL_MS = 10;
const NEWER_HOLDER_BOUND_MS = 3_000;

function busyLoop(ms: number): void {
  const end = performance.now() + ms;
  // A busy loop, not a timer: it blocks the event loop like a long GC pause would.
  while (performance.now() < end) {
    /* spin */
  }
}

/** What the worker knows of a cycle before its section runs. */
export type SectionBase = Pick<CycleEvent, 'cycle' | 'resource' | 'callAt' | 'watchdog'>;

/**
 * The critical section: a fenced read-modify-write of the resource's value chain on
 * the protected store. It deliberately does not check `lock.signal` before writing:
 * it plays the holder who does not know it was paused, so only fencing protects the
 * data (the checker verifies that it did).
 */
export class CriticalSection {
  constructor(
    private readonly store: RedisFencedStore,
    private readonly worker: number,
  ) {}

  /**
   * Runs the section under `lock`; returns the cycle's record (the caller adds the
   * release time) and, when a freeze was performed, its fault record.
   */
  async run(
    lock: Lock,
    base: SectionBase,
    acquiredAt: number,
    holdMs: number,
    freeze: BusyFreeze | undefined,
  ): Promise<{ cycle: CycleEvent; fault?: FaultEvent }> {
    const token = lock.fencingToken!;
    if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));

    let read: CycleEvent['read'] = 'accepted';
    let readSeq: number | null = null;
    try {
      readSeq = decodeValue(await this.store.readForUpdate(base.resource, token))?.seq ?? 0;
    } catch (err) {
      read = err instanceof StaleFencingTokenError ? 'rejected' : 'error';
    }

    let fault: FaultEvent | undefined;
    if (freeze) {
      const start = Date.now();
      busyLoop(freeze.ms);
      fault = { type: 'fault', kind: 'busy-worker', targets: [this.worker], start, end: Date.now() };
      await this.untilNewerHolder(base.resource, token);
    }

    let write: WriteOutcome = 'skipped';
    let writeSeq: number | null = null;
    let writeStartAt: number | null = null;
    let writeEndAt: number | null = null;
    if (readSeq !== null) {
      writeSeq = readSeq + 1;
      writeStartAt = Date.now();
      try {
        await this.store.write(base.resource, encodeValue({ seq: writeSeq, worker: this.worker, cycle: base.cycle }), token);
        write = 'accepted';
      } catch (err) {
        write = err instanceof StaleFencingTokenError ? 'rejected' : 'error';
      }
      writeEndAt = Date.now();
    }

    const cycle: CycleEvent = {
      type: 'cycle',
      worker: this.worker,
      ...base,
      token: token.toString(),
      acquiredAt,
      validUntil: lock.expiration,
      releaseAt: Date.now(),
      lostSignal: lock.signal.aborted,
      read,
      readSeq,
      write,
      writeSeq,
      writeStartAt,
      writeEndAt,
      staleByDesign: freeze !== undefined,
    };
    return fault ? { cycle, fault } : { cycle };
  }

  /**
   * The section of an unfenced (plain) lock: hold for `holdMs`, then report. Without a
   * token there is nothing the store could check, so it is not touched; the checker
   * judges these cycles by their validity intervals alone.
   */
  async runPlain(lock: Lock, base: SectionBase, acquiredAt: number, holdMs: number): Promise<CycleEvent> {
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    return {
      type: 'cycle',
      worker: this.worker,
      ...base,
      fenced: false,
      acquiredAt,
      validUntil: lock.expiration,
      releaseAt: Date.now(),
      lostSignal: lock.signal.aborted,
      read: 'skipped',
      readSeq: null,
      write: 'skipped',
      writeSeq: null,
      writeStartAt: null,
      writeEndAt: null,
      staleByDesign: false,
    };
  }

  /**
   * After a freeze past the TTL, waits (bounded) until a newer holder has accessed the
   * resource, so the write that follows is stale for certain and fencing must refuse it.
   */
  private async untilNewerHolder(resource: string, token: bigint): Promise<void> {
    const give = performance.now() + NEWER_HOLDER_BOUND_MS;
    while (performance.now() < give) {
      const seen = await this.store.read(resource).catch(() => undefined);
      if (seen && seen.token > token) return;
      await new Promise((resolve) => setTimeout(resolve, NEWER_HOLDER_POLL_MS));
    }
  }
}
