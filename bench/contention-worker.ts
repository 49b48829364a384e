/** A child of a contention run: W workers on one key, one library instance, until the parent's deadline. */
import { createContender } from './contenders.js';
import type { Section } from './handoff-log.js';
import { nowMs } from './stats.js';
import { criticalSection, type ChildArgs, type FromChild, type ToChild } from './workloads/contention.js';

const { name, profile, key, urls, shape } = JSON.parse(process.argv[2]!) as ChildArgs;
const TTL = 10_000;

function send(m: FromChild): void {
  process.send!(m);
}

const contender = await createContender(name, urls, profile);
// Connect and load scripts outside the measurement.
await (await contender.acquire(`${key}:warm:${process.pid}`, TTL)).release();

const until = await new Promise<number>((resolve) => {
  process.once('message', (m: ToChild) => resolve(m.until));
  send({ type: 'ready' });
});

const sections: Section[] = [];
let failures = 0;
let over = false;
const workers = Promise.all(
  Array.from({ length: shape.workers }, async (_, worker) => {
    while (!over) {
      let held;
      try {
        held = await contender.acquire(key, TTL);
      } catch {
        failures++; // gave up (a library's own acquire timeout): counted, the worker tries again
        continue;
      }
      const acquiredAt = nowMs();
      await criticalSection(shape.holdMs);
      const releasedAt = nowMs();
      await held.release();
      sections.push({ worker, acquiredAt, releasedAt });
      await new Promise((resolve) => setTimeout(resolve, shape.pauseMs));
    }
  }),
);
// At the deadline the run is over, whatever the workers are doing: a library that livelocks
// under contention would otherwise keep its waiters (and the run) going for minutes.
// Its keys are unique to this run and expire on their own.
await Promise.race([workers, new Promise((resolve) => setTimeout(resolve, Math.max(0, until - nowMs())))]);
over = true;
if (process.env.BENCH_DEBUG) process.stderr.write(`[worker ${process.pid}] ${name} waits: ${JSON.stringify(contender.waitStats?.())}\n`);
const report = sections.filter((s) => s.releasedAt <= until);
process.send!({ type: 'done', sections: report, failures } satisfies FromChild, () => process.exit(0));
