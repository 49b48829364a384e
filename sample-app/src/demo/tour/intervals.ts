import type { Section } from '../../sections/section.js';

/** Whether two sections were inside at the same time (touching ends do not overlap). */
export function overlap(a: Section, b: Section): boolean {
  return a.start < b.end && b.start < a.end;
}

/** The most sections inside at one moment. */
export function maxConcurrent(sections: readonly Section[]): number {
  // Ends sort before starts at the same instant: a hand-off at one millisecond is not an overlap.
  const edges = sections.flatMap((s) => [
    { at: s.start, delta: 1 },
    { at: s.end, delta: -1 },
  ]);
  edges.sort((x, y) => x.at - y.at || x.delta - y.delta);
  let inside = 0;
  let most = 0;
  for (const e of edges) {
    inside += e.delta;
    most = Math.max(most, inside);
  }
  return most;
}

/** How many of `exclusive` overlap another exclusive section or any of `shared`. */
export function exclusionBreaks(exclusive: readonly Section[], shared: readonly Section[] = []): number {
  let breaks = 0;
  for (const [i, a] of exclusive.entries()) {
    if (exclusive.some((b, j) => j !== i && overlap(a, b)) || shared.some((b) => overlap(a, b))) breaks++;
  }
  return breaks;
}

/** Whether the tokens, taken in the order their sections started, strictly increase. */
export function tokensIncrease(writes: ReadonlyArray<{ section: Section; fence: bigint }>): boolean {
  const ordered = [...writes].sort((a, b) => a.section.start - b.section.start);
  return ordered.every((w, i) => i === 0 || w.fence > ordered[i - 1]!.fence);
}
