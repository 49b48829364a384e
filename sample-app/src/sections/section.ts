import { setTimeout as sleep } from 'node:timers/promises';

/**
 * When one request was inside its critical section, in wall-clock epoch ms, and where. The demo
 * compares the sections of every instance (one machine, one clock) to show which ones overlapped:
 * readers may, writers and the holders of a mutex may not, and at most k permit holders may.
 */
export interface Section {
  readonly instance: string;
  readonly start: number;
  readonly end: number;
}

/** The response header that carries a {@link Section} when the body is not JSON (the CSV export). */
export const SECTION_HEADER = 'x-lock-section';

/**
 * Runs `work` inside the caller's lock, then `workMs` of simulated work (the rendering, the
 * upload), and returns its result with the section it occupied. `Date.now()` on purpose: every
 * process reads the same system clock, so sections of different instances compare.
 */
export async function inSection<T>(instance: string, workMs: number, work: () => Promise<T> | T): Promise<{ value: T; section: Section }> {
  const start = Date.now();
  const value = await work();
  if (workMs > 0) await sleep(workMs);
  return { value, section: { instance, start, end: Date.now() } };
}

/** A section as one header value: `instance;start;end`. */
export function formatSection(section: Section): string {
  return `${section.instance};${section.start};${section.end}`;
}

/** Reads a section back from its header value; undefined when missing or malformed. */
export function parseSection(value: string | string[] | undefined): Section | undefined {
  const [instance, start, end] = (Array.isArray(value) ? value[0] : value)?.split(';') ?? [];
  if (!instance || start === undefined || end === undefined) return undefined;
  const s = Number(start);
  const e = Number(end);
  return Number.isFinite(s) && Number.isFinite(e) ? { instance, start: s, end: e } : undefined;
}
