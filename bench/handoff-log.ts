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
  /** The hand-off gaps' distribution (ms), for the charts: p10, p25, p50, p75, p90, p99. */
  readonly gapPercentiles: GapPercentiles;
  /**
   * The same over the hand-offs from one process to another only (NaN with one process): a local
   * hand-off (lock cohorting) costs no Redis round trip, so the two mixed would hide the cost of the
   * hand-offs that cross processes.
   */
  readonly crossGapPercentiles: GapPercentiles;
  /** Sections that began before the previous one ended: must be 0. */
  readonly overlaps: number;
  readonly sections: number;
  /** Fewest sections any worker got, over the mean per worker (1 = perfectly even, 0 = a worker starved). */
  readonly fairness: number;
}

/** Percentiles of the hand-off gaps (ms). */
export interface GapPercentiles {
  readonly p10: number;
  readonly p25: number;
  readonly p50: number;
  readonly p75: number;
  readonly p90: number;
  readonly p99: number;
}

export function gapPercentiles(gaps: readonly number[]): GapPercentiles {
  const at = (p: number): number => percentile(gaps, p);
  return { p10: at(10), p25: at(25), p50: at(50), p75: at(75), p90: at(90), p99: at(99) };
}

/** `workersPerProcess`: workers `w` and `v` are in the same process when `⌊w / it⌋ = ⌊v / it⌋`. */
export function summarize(
  sections: readonly Section[],
  workers: number,
  durationMs: number,
  workersPerProcess = workers,
): ContentionResult {
  const sorted = [...sections].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const gaps: number[] = [];
  const crossGaps: number[] = [];
  const processOf = (s: Section): number => Math.floor(s.worker / workersPerProcess);
  let overlaps = 0;
  for (let i = 1; i < sorted.length; i++) {
    const gap = sorted[i]!.acquiredAt - sorted[i - 1]!.releasedAt;
    if (gap < 0) overlaps++;
    gaps.push(gap);
    if (processOf(sorted[i]!) !== processOf(sorted[i - 1]!)) crossGaps.push(gap);
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
    gapPercentiles: gapPercentiles(gaps),
    crossGapPercentiles: gapPercentiles(crossGaps),
    overlaps,
    sections: sections.length,
    fairness: avg > 0 ? Math.min(...counts) / avg : 0,
  };
}
