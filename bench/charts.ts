/**
 * SVG charts of a benchmark run, drawn by this small file (no chart library, no browser): plain
 * SVG text that GitHub and any viewer render. Two kinds: grouped horizontal bars of ratios with a
 * reference line (1 = the floor), and a percentile box per row on a log scale (hand-off gaps).
 */
import type { GapPercentiles } from './handoff-log.js';

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const COLORS = ['#2563eb', '#f59e0b', '#10b981', '#ef4444'] as const;
const LABEL_W = 250;
const PLOT_W = 460;
const RIGHT = 70;
const ROW_H = 34;
const TOP = 64;

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`;
}

function frame(width: number, height: number, title: string, subtitle: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(12, 22, title, 'font-size="15" font-weight="600" fill="#111827"'),
    text(12, 40, subtitle, 'fill="#4b5563"'),
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** A series of a bar chart: one value per category (NaN: not measured, drawn as "–"). */
export interface BarSeries {
  readonly name: string;
  readonly values: readonly number[];
}

export interface BarChart {
  readonly title: string;
  readonly subtitle: string;
  readonly categories: readonly string[];
  readonly series: readonly BarSeries[];
  /** Where the dashed reference line goes (1: the floor), and its label. */
  readonly reference: { readonly value: number; readonly label: string };
}

/**
 * Grouped horizontal bars, one group per category, labelled with their values (`0.81×`).
 *
 * @example
 * ```ts
 * const svg = barChart({ title: 'Speed', subtitle: 'vs the floor', categories: ['ours'],
 *   series: [{ name: 'latency', values: [0.8] }], reference: { value: 1, label: 'floor' } });
 * ```
 */
export function barChart(c: BarChart): string {
  const finite = c.series.flatMap((s) => s.values).filter(Number.isFinite);
  const max = Math.max(c.reference.value, ...finite) * 1.08;
  const x = (v: number): number => LABEL_W + (Math.max(0, v) / max) * PLOT_W;
  const barH = Math.min(14, (ROW_H - 8) / c.series.length);
  const groupH = Math.max(ROW_H, barH * c.series.length + 10);
  const height = TOP + groupH * c.categories.length + 30;
  const body: string[] = [];
  c.series.forEach((s, i) => {
    const lx = LABEL_W + i * 190;
    body.push(`<rect x="${lx}" y="${TOP - 16}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/>`);
    body.push(text(lx + 14, TOP - 7, s.name, 'fill="#374151"'));
  });
  c.categories.forEach((cat, row) => {
    const y0 = TOP + row * groupH;
    if (row % 2 === 1) body.push(`<rect x="0" y="${y0}" width="${LABEL_W + PLOT_W + RIGHT}" height="${groupH}" fill="#f9fafb"/>`);
    body.push(text(LABEL_W - 8, y0 + groupH / 2 + 4, cat, 'text-anchor="end" fill="#111827"'));
    c.series.forEach((s, i) => {
      const v = s.values[row] ?? NaN;
      const y = y0 + (groupH - barH * c.series.length) / 2 + i * barH;
      if (Number.isFinite(v)) {
        const w = x(v) - LABEL_W;
        body.push(
          `<rect x="${LABEL_W}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${(barH - 2).toFixed(1)}" fill="${COLORS[i % COLORS.length]}"/>`,
        );
      }
      const label = Number.isFinite(v) ? `${v.toFixed(2)}×` : '–';
      body.push(text((Number.isFinite(v) ? x(v) : LABEL_W) + 4, y + barH - 4, label, 'font-size="11" fill="#374151"'));
    });
  });
  const rx = x(c.reference.value);
  const bottom = TOP + groupH * c.categories.length;
  body.push(`<line x1="${rx.toFixed(1)}" y1="${TOP - 4}" x2="${rx.toFixed(1)}" y2="${bottom}" stroke="#111827" stroke-dasharray="4 3"/>`);
  body.push(text(rx, bottom + 16, c.reference.label, 'text-anchor="middle" fill="#111827"'));
  return frame(LABEL_W + PLOT_W + RIGHT, height, c.title, c.subtitle, body);
}

/** One row of a percentile chart. */
export interface PercentileRow {
  readonly label: string;
  readonly p: GapPercentiles;
}

/** Log-scale ticks (1, 2, 5 per decade) between `lo` and `hi`. */
function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e;
      if (t >= lo && t <= hi) ticks.push(t);
    }
  }
  return ticks;
}

/**
 * One row per library on a log axis: the box spans p25–p75, the whiskers p10–p90, the thick tick
 * is the median and the dot the p99. Values under `floorMs` are drawn at it (a log axis has no 0).
 *
 * @example
 * ```ts
 * const svg = percentileChart('Hand-off gaps', '4 × 4', 'ms', [{ label: 'ours', p: gapPercentiles(gaps) }]);
 * ```
 */
export function percentileChart(title: string, subtitle: string, unit: string, rows: readonly PercentileRow[], floorMs = 0.01): string {
  const values = rows.flatMap((r) => Object.values(r.p) as number[]).filter(Number.isFinite);
  const lo = Math.max(floorMs, 10 ** Math.floor(Math.log10(Math.max(floorMs, Math.min(...values, 1)))));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values, lo * 10)));
  const x = (v: number): number => LABEL_W + ((Math.log10(Math.max(lo, v)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * PLOT_W;
  const bottom = TOP + rows.length * ROW_H;
  const body: string[] = [];
  for (const t of logTicks(lo, hi)) {
    body.push(`<line x1="${x(t).toFixed(1)}" y1="${TOP - 4}" x2="${x(t).toFixed(1)}" y2="${bottom}" stroke="#e5e7eb"/>`);
    body.push(text(x(t), bottom + 16, `${t}`, 'text-anchor="middle" font-size="11" fill="#4b5563"'));
  }
  body.push(text(LABEL_W + PLOT_W, bottom + 32, unit, 'text-anchor="end" fill="#4b5563"'));
  body.push(text(LABEL_W, TOP - 10, 'box p25–p75, whiskers p10–p90, bar median, dot p99', 'fill="#374151"'));
  rows.forEach((r, i) => {
    const y = TOP + i * ROW_H + ROW_H / 2;
    const c = i === 0 ? COLORS[0] : '#6b7280';
    body.push(text(LABEL_W - 8, y + 4, r.label, 'text-anchor="end" fill="#111827"'));
    if (!Number.isFinite(r.p.p50)) {
      body.push(text(LABEL_W + 4, y + 4, 'no hand-offs measured', 'fill="#6b7280"'));
      return;
    }
    const { p10, p25, p50, p75, p90, p99 } = r.p;
    body.push(`<line x1="${x(p10).toFixed(1)}" y1="${y}" x2="${x(p90).toFixed(1)}" y2="${y}" stroke="${c}"/>`);
    for (const v of [p10, p90])
      body.push(`<line x1="${x(v).toFixed(1)}" y1="${y - 5}" x2="${x(v).toFixed(1)}" y2="${y + 5}" stroke="${c}"/>`);
    const bw = Math.max(1, x(p75) - x(p25));
    body.push(
      `<rect x="${x(p25).toFixed(1)}" y="${y - 8}" width="${bw.toFixed(1)}" height="16" fill="${c}" fill-opacity="0.25" stroke="${c}"/>`,
    );
    body.push(`<line x1="${x(p50).toFixed(1)}" y1="${y - 9}" x2="${x(p50).toFixed(1)}" y2="${y + 9}" stroke="${c}" stroke-width="3"/>`);
    body.push(`<circle cx="${x(p99).toFixed(1)}" cy="${y}" r="3.5" fill="${c}"/>`);
    body.push(text(LABEL_W + PLOT_W + 6, y + 4, `p50 ${p50.toFixed(2)}`, 'font-size="11" fill="#374151"'));
  });
  return frame(LABEL_W + PLOT_W + RIGHT, bottom + 42, title, subtitle, body);
}
