/**
 * The benchmark's regression guard: `npm run bench -- --check` compares the run's ratios (ours
 * against the floor or the best peer of the same run, never absolute times, which depend on the
 * machine and whatever else runs on it) with the committed `bench/baseline.json`, and
 * `--write-baseline` writes that file from the run. The comparison is a pure function, unit-tested
 * in test/bench/regression.test.ts.
 */

/** Which way a ratio improves: `higher` (speed vs the floor) or `lower` (hand-off gap, commands). */
export type Better = 'higher' | 'lower';

/** One ratio of a run, and which way is better. */
export interface Ratio {
  readonly value: number;
  readonly better: Better;
}

/** The ratios of a run, by a name that says what they compare (e.g. `4x4 defaults: gap vs best peer`). */
export type Ratios = Readonly<Record<string, Ratio>>;

/** What `bench/baseline.json` holds. */
export interface Baseline {
  /** Whether the baseline came from a `--quick` run. */
  readonly quick: boolean;
  readonly node: string;
  readonly writtenAt: string;
  readonly ratios: Ratios;
}

/** A ratio that moved the wrong way by more than the tolerance. */
export interface Regression {
  readonly name: string;
  readonly baseline: number;
  readonly current: number;
  readonly better: Better;
  /** `current / baseline - 1`: -0.2 is a 20% drop. */
  readonly change: number;
}

export interface Comparison {
  readonly regressions: readonly Regression[];
  /** Ratios of the baseline this run did not measure (`--only`, or a contender that failed to start). */
  readonly notMeasured: readonly string[];
  /** Ratios this run measured that the baseline lacks (new ones: `--write-baseline` adds them). */
  readonly unknown: readonly string[];
  readonly compared: number;
}

/** The default tolerance: a ratio may move the wrong way by up to 15% before the check fails. */
export const TOLERANCE = 0.15;

/**
 * Compares `current` with `baseline`: a `higher` ratio that dropped below `baseline × (1 − tolerance)`,
 * or a `lower` one that rose above `baseline × (1 + tolerance)`, is a regression; so is a ratio that
 * became NaN or infinite (a contender that measured nothing). Moves the right way never are.
 *
 * @example
 * ```ts
 * const { regressions } = compareRatios(
 *   { 'latency vs floor': { value: 0.8, better: 'higher' } },
 *   { 'latency vs floor': { value: 0.6, better: 'higher' } },
 * );
 * // regressions[0].change === -0.25
 * ```
 */
export function compareRatios(baseline: Ratios, current: Ratios, tolerance = TOLERANCE): Comparison {
  if (!(tolerance >= 0 && tolerance < 1)) throw new RangeError(`tolerance must be in [0, 1), got ${tolerance}: pass e.g. 0.15 for 15%`);
  const regressions: Regression[] = [];
  const notMeasured: string[] = [];
  let compared = 0;
  for (const [name, base] of Object.entries(baseline)) {
    const now = current[name];
    if (!now) {
      notMeasured.push(name);
      continue;
    }
    // A baseline that measured nothing says nothing about this run.
    if (!Number.isFinite(base.value) || base.value <= 0) continue;
    compared++;
    const change = now.value / base.value - 1;
    const worse = !Number.isFinite(now.value) || (base.better === 'higher' ? change < -tolerance : change > tolerance);
    if (worse) regressions.push({ name, baseline: base.value, current: now.value, better: base.better, change });
  }
  const unknown = Object.keys(current).filter((name) => !(name in baseline));
  return { regressions, notMeasured, unknown, compared };
}

/** One line per regression, naming the ratio, both values and the move. */
export function describeRegression(r: Regression): string {
  const pct = Number.isFinite(r.change) ? `${r.change > 0 ? '+' : ''}${(r.change * 100).toFixed(1)}%` : 'no value';
  const way = r.better === 'higher' ? 'dropped' : 'rose';
  return `${r.name}: ${way} from ${r.baseline.toFixed(3)} to ${r.current.toFixed(3)} (${pct}; ${r.better} is better)`;
}

/**
 * Parses the text of `bench/baseline.json`, or throws an error that names the fix.
 *
 * @example
 * ```ts
 * const baseline = parseBaseline(readFileSync('bench/baseline.json', 'utf8'));
 * ```
 */
export function parseBaseline(text: string): Baseline {
  const fix = 'regenerate it with `npm run bench -- --quick --write-baseline`';
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new Error(`bench/baseline.json is not JSON (${(err as Error).message}): ${fix}`, { cause: err });
  }
  const ratios = (data as { ratios?: unknown } | null)?.ratios;
  if (typeof ratios !== 'object' || ratios === null) throw new Error(`bench/baseline.json has no "ratios" object: ${fix}`);
  for (const [name, r] of Object.entries(ratios)) {
    const { value, better } = (r ?? {}) as Partial<Ratio>;
    if (typeof value !== 'number' || (better !== 'higher' && better !== 'lower')) {
      throw new Error(`bench/baseline.json: ratio "${name}" needs a numeric "value" and "better": "higher" | "lower": ${fix}`);
    }
  }
  return data as Baseline;
}
