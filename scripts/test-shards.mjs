// Runs the jest suite as two shards side by side: `npm test` (the README's test command).
//
// Most test files spend their time waiting (TTLs running out, nodes restarting, processes
// starting), not computing, so two files at a time take about half as long on two cores.
// Each shard runs its files one at a time (--runInBand), as one jest run did before, and
// spawns its redis-servers on its own range of ports (REDLOCK_NEST_PORTS, see
// packages/redis-process/src/free-port.ts): a server a test kills and restarts keeps its port,
// and no process outside the shard can be handed that port meanwhile.
//
//   npm test                                   # build, typecheck, then both shards
//   node scripts/test-shards.mjs test/core     # a part of the suite, still sharded
//   REDLOCK_NEST_TEST_SHARDS=1 npm test        # one shard: the whole suite in one jest run
//   npm run test:durations                     # the whole suite, then rewrite test/durations.json
//
// The shards split the files by their durations in test/durations.json (see
// test/harness/duration-sequencer.js), so both end at about the same time.
// Every argument goes to both jest runs. Each shard's lines are printed as they come,
// prefixed with its number; the last line adds both shards' counts up.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const jestBin = fileURLToPath(new URL('../node_modules/jest/bin/jest.js', import.meta.url));
const shards = Number(process.env.REDLOCK_NEST_TEST_SHARDS ?? 2);
if (!Number.isInteger(shards) || shards < 1 || shards > 4) {
  console.error(`REDLOCK_NEST_TEST_SHARDS must be 1 to 4, got ${process.env.REDLOCK_NEST_TEST_SHARDS}.`);
  process.exit(2);
}

/** Ports 10000-19999, split between the shards; Redis Cluster's bus ports (port + 10000) stay below 32768 too. */
function portsOf(shard) {
  const size = Math.floor(10_000 / shards);
  const lo = 10_000 + (shard - 1) * size;
  return `${lo}-${lo + size - 1}`;
}

/** `npm run test:durations`: each shard writes its files' seconds here, merged into test/durations.json at the end. */
const recordDir = process.env.REDLOCK_NEST_UPDATE_DURATIONS ? mkdtempSync(join(tmpdir(), 'redlock-nest-durations-')) : undefined;

const SUMMARY = /^tests: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/;
const children = [];

function runShard(shard) {
  const args = ['--runInBand', ...(shards > 1 ? [`--shard=${shard}/${shards}`, '--passWithNoTests'] : []), ...process.argv.slice(2)];
  const child = spawn(process.execPath, [jestBin, ...args], {
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules`.trim(),
      REDLOCK_NEST_PORTS: portsOf(shard),
      ...(recordDir ? { REDLOCK_NEST_RECORD_DURATIONS: join(recordDir, `shard-${shard}.json`) } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const counts = { passed: 0, failed: 0, skipped: 0, seen: false };
  const tag = shards > 1 ? `[${shard}] ` : '';
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: stream }).on('line', (line) => {
      const summary = SUMMARY.exec(line);
      if (summary) {
        counts.passed += Number(summary[1]);
        counts.failed += Number(summary[2]);
        counts.skipped += Number(summary[3] ?? 0);
        counts.seen = true;
      }
      out.write(`${tag}${line}\n`);
    });
  }
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ shard, code: code ?? (signal ? 1 : 0), counts })));
}

// Ctrl-C or CI's timeout: stop both shards (each kills its own servers on exit).
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const started = Date.now();
const results = await Promise.all(Array.from({ length: shards }, (_, i) => runShard(i + 1)));
const total = results.reduce(
  (sum, r) => ({ passed: sum.passed + r.counts.passed, failed: sum.failed + r.counts.failed, skipped: sum.skipped + r.counts.skipped }),
  { passed: 0, failed: 0, skipped: 0 },
);
const broken = results.filter((r) => r.code !== 0 || !r.counts.seen);
// A shard that crashed before its summary counts as a failure even with no failed test.
if (broken.length > 0 && total.failed === 0) total.failed = broken.length;
const seconds = Math.round((Date.now() - started) / 1000);
if (recordDir) {
  const file = fileURLToPath(new URL('../test/durations.json', import.meta.url));
  const merged = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  for (const r of results) {
    const shardFile = join(recordDir, `shard-${r.shard}.json`);
    if (existsSync(shardFile)) Object.assign(merged, JSON.parse(readFileSync(shardFile, 'utf8')));
  }
  const root = fileURLToPath(new URL('..', import.meta.url));
  const kept = Object.keys(merged)
    .filter((path) => existsSync(join(root, path)))
    .sort();
  writeFileSync(file, `${JSON.stringify(Object.fromEntries(kept.map((path) => [path, merged[path]])), null, 2)}\n`);
  rmSync(recordDir, { recursive: true, force: true });
  console.log(`test/durations.json: ${kept.length} files`);
}
for (const r of broken) console.error(`shard ${r.shard}/${shards} exited with code ${r.code}${r.counts.seen ? '' : ' before its summary'}.`);
console.log(`all shards: ${seconds} s`);
console.log(`tests: ${total.passed} passed, ${total.failed} failed${total.skipped ? `, ${total.skipped} skipped` : ''}`);
process.exit(broken.length > 0 ? 1 : 0);
