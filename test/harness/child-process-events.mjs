// Loaded with `node --import` into Node.js child processes that tests spawn (see
// child-process-guard.ts): a process warning (MaxListenersExceededWarning, a deprecation, …) is
// printed and makes the child exit with code 1, as it fails a test in the jest process itself
// (fail-on-process-events.ts). Unhandled rejections and uncaught exceptions already end a Node
// process with a non-zero code. The tests check the child's exit code.
let warnings = 0;
process.on('warning', (warning) => {
  warnings++;
  process.stderr.write(`process warning (fails this child): ${warning.stack ?? `${warning.name}: ${warning.message}`}\n`);
});
// Also after an explicit process.exit(0): 'exit' listeners may still change the exit code.
process.on('exit', () => {
  if (warnings > 0 && !process.exitCode) process.exitCode = 1;
});
