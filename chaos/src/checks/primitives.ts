import type { HoldEvent } from '../primitive-history.js';

export interface PrimitiveFindings {
  readonly reads: number;
  readonly writes: number;
  readonly permits: number;
  /** The most permit holders valid at one instant, per semaphore resource. */
  readonly maxPermitHolders: number;
  /** A reader valid while a writer was, or two writers valid at once. */
  readonly readWriteOverlaps: string[];
  /** More valid holders of a semaphore at one instant than its permits. */
  readonly permitOverflows: string[];
}

/** The interval in which a holder's lock was valid (never after its release call). */
function valid(h: HoldEvent): [number, number] {
  return [h.acquiredAt, Math.min(h.releaseAt, h.validUntil)];
}

function label(h: HoldEvent): string {
  const [start, end] = valid(h);
  return `w${h.worker}#${h.cycle}(${h.primitive} ${h.resource}, valid ${start}..${Math.round(end)})`;
}

function overlap(a: HoldEvent, b: HoldEvent): boolean {
  const [as, ae] = valid(a);
  const [bs, be] = valid(b);
  return as < be && bs < ae;
}

/**
 * Read-write: no reader's validity interval overlaps a writer's, no two writers' overlap.
 * Semaphore: at most `permits` validity intervals overlap at any instant.
 */
export function checkPrimitives(holds: readonly HoldEvent[]): PrimitiveFindings {
  const readWriteOverlaps: string[] = [];
  const permitOverflows: string[] = [];
  const rw = holds.filter((h) => h.primitive !== 'semaphore');
  const writers = rw.filter((h) => h.primitive === 'write');
  for (const w of writers) {
    for (const other of rw) {
      if (other === w || other.resource !== w.resource || !overlap(w, other)) continue;
      // Each pair of writers once.
      if (other.primitive === 'write' && label(other) < label(w)) continue;
      readWriteOverlaps.push(`${label(w)} and ${label(other)} were valid at once`);
    }
  }
  let maxPermitHolders = 0;
  const bySemaphore = new Map<string, HoldEvent[]>();
  for (const h of holds) if (h.primitive === 'semaphore') bySemaphore.set(h.resource, [...(bySemaphore.get(h.resource) ?? []), h]);
  for (const [resource, list] of bySemaphore) {
    const permits = Math.max(...list.map((h) => h.permits ?? 1));
    const events: Array<[number, number, HoldEvent]> = [];
    for (const h of list) {
      const [start, end] = valid(h);
      if (end > start) events.push([start, 1, h], [end, -1, h]);
    }
    // Ends before starts at the same instant: touching intervals do not overlap.
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const inside = new Set<HoldEvent>();
    for (const [, d, h] of events) {
      if (d > 0) inside.add(h);
      else inside.delete(h);
      maxPermitHolders = Math.max(maxPermitHolders, inside.size);
      if (inside.size > permits) {
        permitOverflows.push(`${inside.size} valid holders of ${resource} (${permits} permits): ${[...inside].map(label).join(', ')}`);
      }
    }
  }
  return {
    reads: rw.length - writers.length,
    writes: writers.length,
    permits: holds.length - rw.length,
    maxPermitHolders,
    readWriteOverlaps,
    permitOverflows,
  };
}
