/**
 * What a benchmark run leaves behind besides its tables: the ratios the regression guard tracks
 * (`--check` against `bench/baseline.json`, `--write-baseline` to replace it) and the SVG charts
 * under docs/bench/. Paths are relative to the repository root, where `npm run bench` runs.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { barChart, percentileChart, type PercentileRow } from './charts.js';
import { compareRatios, describeRegression, parseBaseline, type Baseline, type Better, type Ratio } from './regression.js';

const BASELINE = 'bench/baseline.json';
const CHARTS = 'docs/bench';

/** A library's uncontended ratios to the floor, for the speed chart. */
export interface SpeedRow {
  readonly library: string;
  readonly latencyVsFloor: number;
  readonly throughputVsFloor: number;
}

/** The ratios of a run, guarded or not, for the JSON results. */
export interface TrackedRatios {
  readonly guarded: Readonly<Record<string, Ratio>>;
  readonly unguarded: Readonly<Record<string, Ratio>>;
}

export class RunReport {
  private readonly ratios: Record<string, Ratio> = {};
  private readonly unguarded: Record<string, Ratio> = {};
  private readonly charts = new Map<string, string>();

  constructor(private readonly meta: { readonly quick: boolean; readonly node: string }) {}

  /**
   * Records a ratio of the run. Absolute figures never belong here: only ratios within the run.
   * `guard`: whether the baseline keeps it and `--check` fails on it. Only ratios that held within
   * 15% across back-to-back runs with no code change on the shared development machine are guarded;
   * the others are printed and kept in the JSON results (see bench/README.md, "Regression guard").
   */
  track(name: string, value: number, better: Better, guard: boolean): void {
    (guard ? this.ratios : this.unguarded)[name] = { value, better };
  }

  /** The uncontended chart: 1-worker latency and 64-worker throughput, each as a ratio to the floor. */
  speedChart(rows: readonly SpeedRow[], subtitle: string): void {
    this.charts.set(
      'uncontended-vs-floor.svg',
      barChart({
        title: 'Uncontended acquire + release, as a ratio to the raw floor (higher is better)',
        subtitle,
        categories: rows.map((r) => r.library),
        series: [
          { name: 'latency: floor p50 / p50', values: rows.map((r) => r.latencyVsFloor) },
          { name: '64-worker throughput / floor', values: rows.map((r) => r.throughputVsFloor) },
        ],
        reference: { value: 1, label: 'floor = 1' },
      }),
    );
  }

  /** A contention shape's hand-off gap distribution, one row per library. */
  gapChart(file: string, title: string, subtitle: string, rows: readonly PercentileRow[]): void {
    this.charts.set(file, percentileChart(title, subtitle, 'hand-off gap, ms (log scale)', rows));
  }

  get tracked(): TrackedRatios {
    return { guarded: this.ratios, unguarded: this.unguarded };
  }

  /** Writes the charts, then checks against or writes the baseline; returns the process exit code. */
  finish(argv: readonly string[]): number {
    if (this.charts.size > 0) {
      mkdirSync(CHARTS, { recursive: true });
      for (const [file, svg] of this.charts) writeFileSync(`${CHARTS}/${file}`, svg);
      console.log(`charts: ${[...this.charts.keys()].map((f) => `${CHARTS}/${f}`).join(', ')}`);
    }
    if (argv.includes('--write-baseline')) {
      // JSON has no NaN: a ratio this run could not measure is left out rather than written as null.
      const ratios = Object.fromEntries(Object.entries(this.ratios).filter(([, r]) => Number.isFinite(r.value)));
      const baseline: Baseline = { ...this.meta, writtenAt: new Date().toISOString(), ratios };
      writeFileSync(BASELINE, `${JSON.stringify(baseline, null, 2)}\n`);
      console.log(`baseline: ${Object.keys(ratios).length} ratios written to ${BASELINE}`);
    }
    const line = (r: Ratio): string => `${r.value.toFixed(3)} (${r.better} is better)`;
    console.log('guarded ratios:');
    for (const [name, r] of Object.entries(this.ratios)) console.log(`  ${name}: ${line(r)}`);
    console.log('unguarded ratios (too noisy at 15% on a shared machine):');
    for (const [name, r] of Object.entries(this.unguarded)) console.log(`  ${name}: ${line(r)}`);
    if (!argv.includes('--check')) return 0;
    if (!existsSync(BASELINE)) {
      console.error(`--check: no ${BASELINE}; write one with \`npm run bench -- --quick --write-baseline\``);
      return 1;
    }
    const baseline = parseBaseline(readFileSync(BASELINE, 'utf8'));
    if (baseline.quick !== this.meta.quick) {
      console.log(`--check: the baseline is from a ${baseline.quick ? '--quick' : 'full'} run, this one is not; ratios compared anyway`);
    }
    const result = compareRatios(baseline.ratios, this.ratios);
    if (result.notMeasured.length) console.log(`--check: not measured in this run: ${result.notMeasured.join('; ')}`);
    if (result.unknown.length) console.log(`--check: not in the baseline: ${result.unknown.join('; ')}`);
    if (result.regressions.length === 0) {
      console.log(`--check: ${result.compared} ratio${result.compared === 1 ? '' : 's'} within 15% of ${BASELINE}`);
      return 0;
    }
    console.error(`--check: ${result.regressions.length} of ${result.compared} ratios regressed by more than 15%:`);
    for (const r of result.regressions) console.error(`  ${describeRegression(r)}`);
    return 1;
  }
}
