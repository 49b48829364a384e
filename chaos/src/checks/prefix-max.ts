/**
 * "Largest value among items whose time is before t", answered in O(log n) after an
 * O(n log n) sort. Every timing rule of the checker has this shape ("a newer token
 * already existed when ..."), so the checks stay linear-ish on 100k-event histories.
 */
export class PrefixMax {
  private readonly times: number[];
  private readonly maxes: bigint[];

  constructor(items: ReadonlyArray<{ time: number; value: bigint }>) {
    const sorted = [...items].sort((a, b) => a.time - b.time);
    this.times = sorted.map((i) => i.time);
    this.maxes = [];
    let max = -1n;
    for (const i of sorted) {
      if (i.value > max) max = i.value;
      this.maxes.push(max);
    }
  }

  /** The largest value among items with time strictly before `t`, or -1n if none. */
  before(t: number): bigint {
    let lo = 0;
    let hi = this.times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.times[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? -1n : this.maxes[lo - 1]!;
  }
}

/** Groups items by a key. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
