/**
 * Reads the event log of the mixed read-write scenario (fixtures/rw-worker.mjs: one global order
 * of "start", "wait", "grant" and "leave" records of every loop of every process) and checks the
 * phase-fair claims on it by events, never by time:
 * - readers: no reader acquisition waits through two write-lock grants (it goes in after the
 *   write phase it queued behind, before the next writer);
 * - writers: while a write lock waits, each reader loop gets in at most twice between two writer
 *   grants (write or plain): readers cannot stream past a waiting writer;
 * - exclusion: no valid write or plain interval overlaps any other valid interval.
 */

export type Kind = 'read' | 'write' | 'plain';

export interface LogEvent {
  readonly event: 'start' | 'wait' | 'grant' | 'leave';
  readonly kind: Kind;
  readonly who: string;
  readonly valid: boolean;
}

export function parseLog(lines: readonly string[]): LogEvent[] {
  return lines.map((line) => {
    const [event, kind, who, valid] = line.split(' ');
    return { event: event as LogEvent['event'], kind: kind as Kind, who: who!, valid: valid !== '0' };
  });
}

/** Grants of each kind. */
export function grants(log: readonly LogEvent[]): Record<Kind, number> {
  const n: Record<Kind, number> = { read: 0, write: 0, plain: 0 };
  for (const e of log) if (e.event === 'grant') n[e.kind]++;
  return n;
}

/** Pairs of valid intervals that overlap where one of them is exclusive (write or plain). */
export function exclusionViolations(log: readonly LogEvent[]): string[] {
  const open = new Map<string, { kind: Kind; at: number }>();
  const pairs: Array<[string, string, number]> = [];
  const validity = new Map<string, boolean>();
  log.forEach((e, i) => {
    const id = `${e.who}@${open.get(e.who)?.at ?? i}`;
    if (e.event === 'grant') {
      for (const [who, o] of open) {
        if (e.kind !== 'read' || o.kind !== 'read') pairs.push([`${who}@${o.at}`, `${e.who}@${i}`, i]);
      }
      open.set(e.who, { kind: e.kind, at: i });
    } else if (e.event === 'leave') {
      validity.set(id, e.valid);
      open.delete(e.who);
    }
  });
  return pairs.filter(([a, b]) => validity.get(a) !== false && validity.get(b) !== false).map(([a, b]) => `${a} overlaps ${b}`);
}

/**
 * For each reader acquisition that waited, the write-lock grants between its first wait and its
 * grant: the most of them. From its first wait, not its start: by then its refused attempt had
 * registered it on every node that answered (an attempt still on its way when a writer released
 * is, for the nodes, a reader that came during the next writer's wait).
 */
export function mostWriteGrantsDuringARead(log: readonly LogEvent[]): number {
  const writesAtWait = new Map<string, number>();
  let writes = 0;
  let most = 0;
  for (const e of log) {
    if (e.event === 'grant' && e.kind === 'write') writes++;
    if (e.kind !== 'read') continue;
    if (e.event === 'wait') writesAtWait.set(e.who, writes);
    if (e.event === 'grant') {
      const atWait = writesAtWait.get(e.who);
      if (atWait !== undefined) most = Math.max(most, writes - atWait);
      writesAtWait.delete(e.who);
    }
  }
  return most;
}

/**
 * For each write-lock acquisition that waited, from its first wait to its grant, cut at every
 * writer grant (write or plain): the most grants one reader loop got within one piece.
 */
export function mostReadsPastAWaitingWriter(log: readonly LogEvent[]): number {
  const waiting = new Map<string, Map<string, number>>();
  let most = 0;
  for (const e of log) {
    if (e.event === 'wait' && e.kind === 'write' && !waiting.has(e.who)) waiting.set(e.who, new Map());
    if (e.event !== 'grant') continue;
    if (e.kind === 'read') {
      for (const counts of waiting.values()) {
        const n = (counts.get(e.who) ?? 0) + 1;
        counts.set(e.who, n);
        most = Math.max(most, n);
      }
    } else {
      for (const counts of waiting.values()) counts.clear();
      if (e.kind === 'write') waiting.delete(e.who);
    }
  }
  return most;
}
