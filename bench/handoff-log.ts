/** Critical sections of a contention run, turned into hand-off gaps and a mutual-exclusion check. */
import { mean, percentile } from './stats.js';

export interface Section {
  readonly worker: number;
  /** When acquire resolved (absolute ms, see nowMs). */
  readonly acquiredAt: number;
  /** When the holder called release. */
  readonly releasedAt: number;
}

export interface ContentionResult {
  readonly sectionsPerSec: number;
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
  return {
    sectionsPerSec: (sections.length * 1000) / durationMs,
    meanGapMs: mean(gaps),
    p99GapMs: percentile(gaps, 99),
    overlaps,
    sections: sections.length,
    fairness: avg > 0 ? Math.min(...counts) / avg : 0,
  };
}
