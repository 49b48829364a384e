import type { Tally } from './tally.js';

/**
 * Live counters while the demo runs: a redrawn line on a terminal, a plain line every
 * 10 % when the output is a pipe or a file (CI logs stay readable).
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private lastDecile = -1;
  private readonly tty: boolean;

  constructor(
    private readonly tally: Tally,
    private readonly total: number,
    private readonly out: NodeJS.WriteStream = process.stdout,
  ) {
    this.tty = Boolean(out.isTTY);
  }

  start(): void {
    this.timer = setInterval(() => this.draw(), this.tty ? 150 : 250);
    this.timer.unref();
  }

  /** Prints an event above the progress line. */
  event(text: string): void {
    if (this.tty) this.out.write('\r\x1b[2K');
    this.out.write(`  • ${text}\n`);
    this.draw();
  }

  stop(): void {
    clearInterval(this.timer);
    this.draw(true);
    if (this.tty) this.out.write('\n');
  }

  private draw(final = false): void {
    const t = this.tally;
    // The freeze scenario adds a few requests of its own on top of the plan.
    const total = Math.max(this.total, t.sent);
    const fraction = total === 0 ? 1 : Math.min(1, t.done / total);
    const c = t.counts;
    const counters =
      `${String(t.done).padStart(String(total).length)}/${total}  paid ${c.paid}  already-paid ${c.alreadyPaid}  ` +
      `409 ${c.locked}  stale-rejected ${c.stale}  503 ${c.unavailable}  errors ${c.error + c.notFound}`;
    if (this.tty) {
      const width = 24;
      const filled = Math.round(fraction * width);
      this.out.write(`\r\x1b[2K  [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${counters}`);
      return;
    }
    const decile = Math.floor(fraction * 10);
    if (decile > this.lastDecile || final) {
      if (decile === this.lastDecile && final) return;
      this.lastDecile = decile;
      this.out.write(`  ${String(decile * 10).padStart(3)}%  ${counters}\n`);
    }
  }
}
