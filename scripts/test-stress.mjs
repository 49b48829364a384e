// Runs jest while another process keeps a core busy, optionally several times, and prints
// which tests failed in how many of the runs.
//
// A test that passes on an idle laptop and fails on a loaded CI machine is a race between
// the test and the code (a sleep, a timer, a duration assertion) or inside the code. A busy
// core makes timers fire late and replies arrive in bursts, so those races happen here first.
//
//   npm run test:stress                                      # the whole suite, once
//   npm run test:stress -- test/core/lock/lifecycle.test.ts --repeat 10
//   npm run test:stress -- test/etcd --repeat 5 --busy 2 -t 'releases'
//
// Options: --repeat N (runs of the chosen files, default 1), --busy N (spinning processes,
// default 1, 0 for none). Everything else goes to jest as is (files, -t, --randomize...).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

function parse(argv) {
  const options = { repeat: 1, busy: 1, jest: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.startsWith('--') ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    if (name === '--repeat' || name === '--busy') {
      const raw = inline ?? argv[++i];
      const n = Number(raw);
      if (!Number.isInteger(n) || n < (name === '--repeat' ? 1 : 0)) {
        throw new Error(`${name} takes a whole number (${name === '--repeat' ? '≥ 1' : '≥ 0'}), got ${raw ?? 'nothing'}: e.g. ${name} 10.`);
      }
      options[name.slice(2)] = n;
    } else {
      options.jest.push(arg);
    }
  }
  return options;
}

/** A child node process spinning on one core until killed: the load a shared CI machine adds. */
function spinner() {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  child.on('error', (err) => console.error(`test:stress: the busy process failed: ${err.message}`));
  return child;
}

function runJest(args, outputFile) {
  const jestBin = join('node_modules', 'jest', 'bin', 'jest.js');
  const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules`.trim() };
  const child = spawn(process.execPath, [jestBin, '--runInBand', '--json', `--outputFile=${outputFile}`, ...args], {
    stdio: 'inherit',
    env,
  });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

/** Failed tests of one run, by "file › full name"; a file that did not run at all counts as one failure of the file. */
function failuresOf(outputFile) {
  let report;
  try {
    report = JSON.parse(readFileSync(outputFile, 'utf8'));
  } catch {
    return new Map([['(jest itself: no report written)', 'jest exited before writing its report']]);
  }
  const failed = new Map();
  for (const file of report.testResults ?? []) {
    const name = relative(process.cwd(), file.name);
    const tests = file.assertionResults ?? [];
    for (const test of tests) {
      if (test.status === 'failed') failed.set(`${name} › ${test.fullName}`, firstLine(test.failureMessages?.[0]));
    }
    if (file.status === 'failed' && !tests.some((t) => t.status === 'failed')) {
      failed.set(`${name} (the file)`, firstLine(file.message));
    }
  }
  return failed;
}

function firstLine(message) {
  // eslint-disable-next-line no-control-regex
  const plain = String(message ?? '').replace(/\u001b\[[0-9;]*m/g, '');
  return (
    plain
      .split('\n')
      .find((line) => line.trim() !== '' && !/^\s*●/.test(line))
      ?.trim() ?? ''
  );
}

async function main() {
  const options = parse(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'redlock-nest-stress-'));
  const busy = Array.from({ length: options.busy }, spinner);
  const stopBusy = () => busy.forEach((child) => child.kill('SIGKILL'));
  process.once('SIGINT', () => {
    stopBusy();
    process.exit(130);
  });
  const counts = new Map();
  const exitCodes = [];
  try {
    for (let run = 1; run <= options.repeat; run++) {
      console.log(`\ntest:stress: run ${run} of ${options.repeat}, ${options.busy} busy process(es)`);
      const outputFile = join(dir, `run-${run}.json`);
      exitCodes.push(await runJest(options.jest, outputFile));
      for (const [test, message] of failuresOf(outputFile)) {
        const entry = counts.get(test) ?? { failed: 0, runs: [], message };
        entry.failed++;
        entry.runs.push(run);
        counts.set(test, entry);
      }
    }
  } finally {
    stopBusy();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\ntest:stress: ${options.repeat} run(s) under ${options.busy} busy process(es)`);
  if (counts.size === 0 && exitCodes.every((code) => code === 0)) {
    console.log('test:stress: no failures');
    return;
  }
  const sorted = [...counts].sort((a, b) => b[1].failed - a[1].failed || a[0].localeCompare(b[0]));
  for (const [test, { failed, runs, message }] of sorted) {
    console.log(`  ${failed}/${options.repeat} failed (runs ${runs.join(', ')}): ${test}`);
    if (message) console.log(`      ${message.slice(0, 200)}`);
  }
  if (counts.size === 0) console.log(`test:stress: jest exited with ${exitCodes.join(', ')} but reported no failed test`);
  process.exitCode = 1;
}

main().catch((err) => {
  console.error(`test:stress: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 2;
});
