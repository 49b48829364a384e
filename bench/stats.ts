/** Small statistics helpers: the benchmark reports medians of rounds, never a single run. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The `p`-th percentile (0–100), nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/**
 * Cross-process comparable time in ms (ns resolution): the children of the multi-process run share
 * it. The system's monotonic clock (`process.hrtime`), not `performance.timeOrigin + now()`: each
 * process fixes its time origin from the wall clock when it starts, so a clock adjustment between
 * two children's starts shifted their timestamps apart, and the hand-off log then counted
 * "overlaps" of sections that never overlapped (every library, the floor too, in one run).
 */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Rotates `items` by `round`, so no contender always runs first (or last) on a warming machine. */
export function rotate<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}
