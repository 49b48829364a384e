/**
 * Splits the suite between `npm test`'s shards by how long each file takes, not by jest's hash of
 * its path: with the hash, one shard ran 95 s longer than the other, and `npm test` lasts as long
 * as its slowest shard. Durations come from test/durations.json (seconds per file, relative
 * paths), which `npm run test:durations` rewrites from a whole run; a file not listed there yet
 * counts as the median. Longest first, each to the shard with the least time so far; ties by
 * path, so every shard computes the same split. Within a shard, the longest files run first.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import Sequencer from '@jest/test-sequencer';

const root = fileURLToPath(new URL('../..', import.meta.url));
const durationsFile = fileURLToPath(new URL('../durations.json', import.meta.url));

function readDurations() {
  try {
    return JSON.parse(readFileSync(durationsFile, 'utf8'));
  } catch {
    return {};
  }
}

/** Each test's expected seconds: its recorded duration, or the median of those recorded. */
function weigh(tests) {
  const known = readDurations();
  const values = Object.values(known).sort((a, b) => a - b);
  const fallback = values.length > 0 ? values[Math.floor(values.length / 2)] : 1;
  return tests.map((test) => ({ test, path: relative(root, test.path), seconds: known[relative(root, test.path)] ?? fallback }));
}

function longestFirst(a, b) {
  return b.seconds - a.seconds || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

// The package's CommonJS build, imported as ESM, may nest its class under `default`.
const Base = Sequencer.default ?? Sequencer;

export default class DurationSequencer extends Base {
  shard(tests, { shardIndex, shardCount }) {
    const loads = new Array(shardCount).fill(0);
    const mine = [];
    for (const entry of weigh(tests).sort(longestFirst)) {
      let target = 0;
      for (let s = 1; s < shardCount; s++) if (loads[s] < loads[target]) target = s;
      loads[target] += entry.seconds;
      if (target === shardIndex - 1) mine.push(entry.test);
    }
    return mine;
  }

  sort(tests) {
    return weigh(tests)
      .sort(longestFirst)
      .map((entry) => entry.test);
  }

  /** With REDLOCK_NEST_RECORD_DURATIONS set to a file, writes this run's seconds per file there (test-shards.mjs merges them). */
  cacheResults(tests, results) {
    super.cacheResults(tests, results);
    const out = process.env.REDLOCK_NEST_RECORD_DURATIONS;
    if (!out) return;
    const seconds = {};
    for (const file of results.testResults) {
      const { start, end } = file.perfStats;
      if (start && end) seconds[relative(root, file.testFilePath)] = Math.round((end - start) / 100) / 10;
    }
    writeFileSync(out, JSON.stringify(seconds));
  }
}
