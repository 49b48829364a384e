/** Critical sections of a contention run, turned into hand-off gaps and a mutual-exclusion check. */
import { percentile } from './stats.js';

export interface Section {
  readonly worker: number;
  /** When acquire resolved (absolute ms, see nowMs). */
  readonly acquiredAt: number;
  /** When the holder called release. */
  readonly releasedAt: number;
}

export interface ContentionResult {
  readonly sectionsPerSec: number;
  /**
   * Time the lock sat free over the number of sections: the mean hand-off gap, counting the
   * run's edges too, so a library that stalls (a few sections, then nothing) cannot show a
   * small mean over its few gaps.
   */
  readonly meanGapMs: number;
  readonly p99GapMs: number;
  /** Sections that began before the previous one ended: must be 0. */
  readonly overlaps: number;
  readonly sections: number;
  /** Fewest sections any worker got, over the mean per worker (1 = perfectly even, 0 = a worker starved). */
  readonly fairness: number;
}

export function summarize(sections: readonly Section[], workers: number, durationMs: number): ContentionResult {
  const sorted = [...sections].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const gaps: number[] = [];
  let overlaps = 0;
  for (let i = 1; i < sorted.length; i++) {
    const gap = sorted[i]!.acquiredAt - sorted[i - 1]!.releasedAt;
    if (gap < 0) overlaps++;
    gaps.push(gap);
  }
  const counts = new Array<number>(workers).fill(0);
  for (const s of sections) counts[s.worker] = (counts[s.worker] ?? 0) + 1;
  const avg = sections.length / workers;
  let held = 0;
  for (const s of sections) held += s.releasedAt - s.acquiredAt;
  return {
    sectionsPerSec: (sections.length * 1000) / durationMs,
    meanGapMs: (durationMs - held) / Math.max(1, sections.length),
    p99GapMs: percentile(gaps, 99),
    overlaps,
    sections: sections.length,
    fairness: avg > 0 ? Math.min(...counts) / avg : 0,
  };
}
