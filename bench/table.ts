/** Plain-text tables for the benchmark report. */

type Cell = string | number;

function format(value: Cell): string {
  if (typeof value === 'string') return value;
  if (Number.isNaN(value)) return '–';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** `a / b` with two decimals, as a string for the table. */
export function ratio(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? (a / b).toFixed(2) : '–';
}

export function printTable(title: string, rows: ReadonlyArray<Record<string, Cell>>): void {
  if (rows.length === 0) return;
  const headers = Object.keys(rows[0]!);
  const cells = rows.map((row) => headers.map((h) => format(row[h] ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]): string => values.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(title);
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) console.log(line(row));
  console.log('');
}
