/**
 * Node.js options for child processes a test spawns (`spawn(process.execPath, [...CHILD_GUARD_ARGS, ...])`):
 * the child exits with code 1 after any process warning, so a test that checks the exit code
 * fails on warnings in the child as it does on warnings in the jest process.
 */
export const CHILD_GUARD_ARGS: readonly string[] = ['--import', new URL('./child-process-events.mjs', import.meta.url).href];
