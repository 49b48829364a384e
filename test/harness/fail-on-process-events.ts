/**
 * Registered in jest.config.js (`setupFilesAfterEnv`), so it runs before every test file: a test
 * fails when the process saw an `unhandledRejection`, an `uncaughtException` or a `warning`
 * (MaxListenersExceededWarning, a deprecation, …) while it ran. Such events are bugs even when
 * every assertion passed: a rejection nobody handled, a listener leak, a timer that threw.
 *
 * Jest runs test code in a VM context whose `process` is a copy: listeners added to it never see
 * the events Node emits on the real process. `vm.runInThisContext` evaluates in Node's main
 * context, where `process` is the real one. The listeners are removed after the file's last test,
 * because with `--runInBand` every test file runs in the same process.
 *
 * Warnings are emitted on the next tick, so one raised at the very end of a test can be reported
 * by the next test (or by `afterAll`): the message names the event, which is what to look for.
 */
import { afterAll, afterEach } from '@jest/globals';
import vm from 'node:vm';

/** One event the process reported while a test ran. */
interface Recorded {
  kind: 'unhandledRejection' | 'uncaughtException' | 'warning';
  error: unknown;
}

const realProcess = vm.runInThisContext('process') as NodeJS.Process;
const recorded: Recorded[] = [];
const pendingRejections = new Map<Promise<unknown>, Recorded>();
let allowedWarnings: Array<(warning: Error) => boolean> = [];

/**
 * The one warning every run emits on purpose: jest needs `--experimental-vm-modules` to run ESM
 * (NestJS 12 is ESM-only), and Node warns once that the flag is experimental. Matched exactly
 * (name and message), so any other ExperimentalWarning still fails the test.
 */
function isVmModulesWarning(warning: Error): boolean {
  return warning.name === 'ExperimentalWarning' && /^VM Modules is an experimental feature/.test(warning.message);
}

const onWarning = (warning: Error): void => {
  if (isVmModulesWarning(warning) || allowedWarnings.some((allow) => allow(warning))) return;
  recorded.push({ kind: 'warning', error: warning });
};
const onUncaught = (error: unknown): void => {
  recorded.push({ kind: 'uncaughtException', error });
};
const onUnhandled = (reason: unknown, promise: Promise<unknown>): void => {
  const entry: Recorded = { kind: 'unhandledRejection', error: reason };
  recorded.push(entry);
  pendingRejections.set(promise, entry);
};
/** A rejection handled later (`const p = f(); await g(); await expect(p).rejects…`) is not a leak. */
const onHandledLate = (promise: Promise<unknown>): void => {
  const entry = pendingRejections.get(promise);
  if (!entry) return;
  pendingRejections.delete(promise);
  const at = recorded.indexOf(entry);
  if (at >= 0) recorded.splice(at, 1);
};

realProcess.on('warning', onWarning);
realProcess.on('uncaughtException', onUncaught);
realProcess.on('unhandledRejection', onUnhandled);
realProcess.on('rejectionHandled', onHandledLate);

/**
 * For a test that provokes a process warning on purpose (to assert it is reported): warnings
 * `match` accepts are not failures until the current test ends.
 *
 * @example
 * allowProcessWarning((w) => w.name === 'DeprecationWarning' && w.message.includes('old option'));
 */
export function allowProcessWarning(match: (warning: Error) => boolean): void {
  allowedWarnings.push(match);
}

function describeEvent({ kind, error }: Recorded): string {
  // Not `instanceof Error`: warnings are created in Node's main context, whose Error differs from the test's.
  const { stack } = (error ?? {}) as { stack?: unknown };
  const text = typeof stack === 'string' ? stack : String(error);
  // Node's warnings carry an optional code and detail (jest's JEST-01 explains itself there).
  const { code, detail } = (error ?? {}) as { code?: unknown; detail?: unknown };
  const lines = [
    `${kind}: ${text}`,
    code ? `code: ${typeof code === 'string' ? code : JSON.stringify(code)}` : '',
    typeof detail === 'string' ? detail : '',
  ].filter(Boolean);
  // Prefixed, so that jest keeps the event's own stack in the message (it trims lines that look
  // like a stack trace, node_modules frames included, which are often where the cause shows).
  return lines.join('\n').replace(/^/gm, '  | ');
}

/** Throws (failing the current test or the file) when anything was recorded; clears the record. */
function failOnRecorded(when: string): void {
  allowedWarnings = [];
  if (recorded.length === 0) return;
  const events = recorded.splice(0).map(describeEvent);
  pendingRejections.clear();
  throw new Error(
    `The process reported ${events.length} event(s) ${when}; each is a bug (fix its cause). ` +
      `An event can also come from work an earlier test left running:\n\n${events.join('\n\n')}`,
  );
}

afterEach(async () => {
  // Let warnings emitted during the test's last tick (process.emitWarning defers to nextTick) arrive.
  await new Promise<void>((resolve) => setImmediate(resolve));
  failOnRecorded('during this test');
});

afterAll(async () => {
  await new Promise<void>((resolve) => setImmediate(resolve));
  try {
    failOnRecorded('after the last test of this file (in afterAll or teardown)');
  } finally {
    realProcess.off('warning', onWarning);
    realProcess.off('uncaughtException', onUncaught);
    realProcess.off('unhandledRejection', onUnhandled);
    realProcess.off('rejectionHandled', onHandledLate);
  }
});
