/**
 * Chaos and soak processes (the orchestrator and every worker) fail on a process warning
 * (MaxListenersExceededWarning, a deprecation, …), as every jest test does
 * (test/harness/fail-on-process-events.ts): under faults and load a warning is a leak or a bug
 * the run must not hide. Unhandled rejections and uncaught exceptions need nothing here: Node
 * already ends the process with a non-zero exit code for them.
 */
let seen = 0;

/**
 * Counts every process warning and hands it to `report` (printed to stderr by default).
 *
 * @example
 * failOnProcessWarnings('chaos');
 * // … at the end:
 * process.exitCode = exitCodeWithWarnings(code);
 */
export function failOnProcessWarnings(label: string, report?: (message: string) => void): void {
  process.on('warning', (warning) => {
    seen++;
    const message = `${label}: process warning (fails the run): ${warning.stack ?? `${warning.name}: ${warning.message}`}`;
    if (report) report(message);
    else console.error(message);
  });
}

/** `code`, or 1 when it is 0 but a process warning was seen. */
export function exitCodeWithWarnings(code: number): number {
  return code === 0 && seen > 0 ? 1 : code;
}
