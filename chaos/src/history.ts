import type { HoldEvent } from './primitive-history.js';

/**
 * The history a chaos run records: one JSON object per line, written by the workers
 * (cycles, errors, their own freezes) and by the nemesis (faults). The checker reads
 * nothing else, so everything it judges must be in here.
 *
 * Times are wall-clock epoch ms (`Date.now()`): every process runs on the same
 * machine, so they share one clock; the monotonic clock of each process has its own
 * origin and may be slewed differently, so it is not comparable across processes.
 */

/** What a worker's fenced write did. */
export type WriteOutcome = 'accepted' | 'rejected' | 'error' | 'skipped';

/**
 * One lock cycle: acquire, then either a fenced read-modify-write on the protected
 * store (a fenced cycle) or a plain hold without any store access (an unfenced cycle
 * of a single resource, which takes the library's SET NX path), then release.
 */
export interface CycleEvent {
  readonly type: 'cycle';
  readonly worker: number;
  /** The worker's cycle number (unique per worker). */
  readonly cycle: number;
  readonly resource: string;
  /**
   * False when the lock was acquired without fencing; absent means fenced (histories
   * and tests from before plain cycles existed).
   */
  readonly fenced?: boolean;
  /** The fencing token, as a decimal string (JSON has no bigint); absent on an unfenced cycle. */
  readonly token?: string;
  /** When the acquire call was made. */
  readonly callAt: number;
  /**
   * True when the lock came by a local hand-off (lock cohorting): the lease of an earlier grant
   * passed on within its validity, with no acquire round (so not a grant of its own).
   */
  readonly handoff?: boolean;
  /** When the acquire call resolved: from here on the worker believes it holds the lock. */
  readonly acquiredAt: number;
  /** The lock's validity end as the library computed it (after the last extension). */
  readonly validUntil: number;
  /** When the worker called release(): its belief of holding ends here. */
  readonly releaseAt: number;
  /** Whether `lock.signal` had aborted (lock reported lost) by `releaseAt`. */
  readonly lostSignal: boolean;
  /**
   * Outcome of the fenced read (readForUpdate); a rejected read means no write is tried.
   * 'skipped' on an unfenced cycle, which does not touch the store.
   */
  readonly read: 'accepted' | 'rejected' | 'error' | 'skipped';
  /** The sequence number read (0 = empty), or null if the read was not accepted. */
  readonly readSeq: number | null;
  /** Outcome of the fenced write. */
  readonly write: WriteOutcome;
  /** The sequence number this cycle tried to write (readSeq + 1), when it wrote. */
  readonly writeSeq: number | null;
  /** When the write was sent and when its answer came, when it wrote. */
  readonly writeStartAt: number | null;
  readonly writeEndAt: number | null;
  /** Whether this cycle used `using()` (watchdog) instead of acquire/release. */
  readonly watchdog: boolean;
  /** True when the worker deliberately wrote after a busy-loop freeze past its TTL. */
  readonly staleByDesign: boolean;
  /** Acquired with `fair: true`: its queue ticket (0 = taken at once, never queued). Absent otherwise. */
  readonly fairTicket?: number;
}

/** A fenced cycle: its token is there. */
export type FencedCycle = CycleEvent & { readonly token: string };

/** Whether a cycle was fenced (a missing marker means fenced). */
export function isFenced(c: CycleEvent): boolean {
  return c.fenced !== false;
}

/**
 * The fenced cycles, the only ones whose token and store accesses mean anything; a
 * fenced cycle without a token is a corrupt history, not something to skip quietly.
 */
export function fencedCycles(cycles: readonly CycleEvent[]): FencedCycle[] {
  return cycles.filter(isFenced).map((c) => {
    if (c.token === undefined) throw new Error(`corrupt history: fenced cycle w${c.worker}#${c.cycle} has no token`);
    return c as FencedCycle;
  });
}

/** A failed acquire call. */
export interface ErrorEvent {
  readonly type: 'error';
  readonly worker: number;
  readonly resource: string;
  /** The error class name (`QuorumUnavailableError`, `LockNotAcquiredError`, ...). */
  readonly error: string;
  readonly callAt: number;
  readonly at: number;
}

/** Kinds of faults. */
export type FaultKind =
  | 'kill-minority'
  | 'pause-minority'
  | 'restart-node'
  | 'kill-majority'
  | 'pause-majority'
  | 'sigstop-worker'
  | 'busy-worker'
  /** One step of a rolling restart: node killed, kept down past the TTL, restarted EMPTY, slow, caught up. */
  | 'rolling-restart'
  /** Overload: many waiters on one key in one worker (nodes healthy). */
  | 'waiter-storm'
  /** Overload: thousands of distinct-key acquisitions issued in one tick by one worker (nodes healthy). */
  | 'burst'
  /**
   * Redis Cluster runs (`--cluster`, the one lock node is a cluster; target 0): the master of a hot
   * resource's slot killed (its replica takes over, it comes back as a replica), paused past
   * `cluster-node-timeout` (failed over while paused, demoted when it resumes), or replaced by its
   * replica with `CLUSTER FAILOVER`. Each ends once the old master is a synced replica again.
   */
  | 'kill-master'
  | 'pause-master'
  | 'failover-master'
  /**
   * etcd runs (`--etcd`): the member that is leader when the fault starts is SIGKILLed (and
   * restarted once a new leader serves), or SIGSTOPped for `minorityDownMs` (a new leader is
   * elected meanwhile; it steps down when resumed). The target is the leader's member index.
   */
  | 'kill-leader'
  | 'pause-leader';

/** Fault kinds that take lock nodes down or pause them (the others target workers, or none). */
export const NODE_FAULTS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'kill-leader',
  'pause-leader',
  'kill-master',
  'pause-master',
  'failover-master',
  'kill-minority',
  'pause-minority',
  'restart-node',
  'kill-majority',
  'pause-majority',
  'rolling-restart',
]);

/** Fault kinds that freeze a worker's event loop (its own calls may fail for that reason alone). */
export const WORKER_FREEZES: ReadonlySet<FaultKind> = new Set<FaultKind>(['sigstop-worker', 'busy-worker']);

/** A fault, from its injection to its healing. */
export interface FaultEvent {
  readonly type: 'fault';
  readonly kind: FaultKind;
  /** Lock node indexes, or the worker id for worker freezes. */
  readonly targets: readonly number[];
  /** When the fault was in effect (after a kill: the processes are gone). */
  readonly start: number;
  /** When it was healed (after a restart: the servers accept connections again). */
  readonly end: number;
  /**
   * What happened, for faults that report more than their times: a rolling restart step
   * (whether the restarted node caught up on every fencing counter before the next step),
   * an overload scenario (its size, how many acquisitions were granted / failed, and how).
   */
  readonly detail?: Record<string, number | string | boolean>;
}

/** The run's shape, written first by the orchestrator (the checker needs the node count). */
export interface SetupEvent {
  readonly type: 'setup';
  /** Lock nodes. */
  readonly nodes: number;
}

/** The value of a resource read after the run. */
export interface FinalEvent {
  readonly type: 'final';
  readonly resource: string;
  readonly seq: number;
  readonly worker: number | null;
  readonly cycle: number | null;
}

export type HistoryEvent = CycleEvent | ErrorEvent | FaultEvent | FinalEvent | SetupEvent | HoldEvent;

/** The value a worker writes to the store: a chain, each write naming the one it read. */
export interface StoreValue {
  readonly seq: number;
  readonly worker: number;
  readonly cycle: number;
}

export function encodeValue(v: StoreValue): string {
  return JSON.stringify(v);
}

/** Parses a stored value; `undefined` (never written) is sequence 0. */
export function decodeValue(raw: string | undefined): StoreValue | undefined {
  if (raw === undefined || raw === '') return undefined;
  const v = JSON.parse(raw) as StoreValue;
  if (!Number.isInteger(v.seq) || v.seq < 1) throw new Error(`corrupt store value: ${raw}`);
  return v;
}

/** Parses JSON-lines text into events (a torn last line from a killed writer is skipped). */
export function parseHistory(text: string): HistoryEvent[] {
  const out: HistoryEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as HistoryEvent);
    } catch {
      // only a process killed mid-write leaves a torn line; the checker counts what is whole
    }
  }
  return out;
}
