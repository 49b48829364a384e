/** A child of an engine contention run: W workers on one key, one engine instance, until the parent's deadline. */
import { createEngineContender, type EngineName, type EngineTargets } from './engine-contenders.js';
import type { Section } from './handoff-log.js';
import { nowMs } from './stats.js';
import { criticalSection, type FromChild, type Shape, type ToChild } from './workloads/contention.js';

const { name, key, targets, shape } = JSON.parse(process.argv[2]!) as {
  name: EngineName;
  key: string;
  targets: EngineTargets;
  shape: Shape;
};
const TTL = 10_000;

const contender = createEngineContender(name, targets);
// Connect outside the measurement.
await (await contender.acquire(`${key}:warm:${process.pid}`, TTL)).release();

const until = await new Promise<number>((resolve) => {
  process.once('message', (m: ToChild) => resolve(m.until));
  process.send!({ type: 'ready' } satisfies FromChild);
});

const sections: Section[] = [];
let failures = 0;
let over = false;
const workers = Promise.all(
  Array.from({ length: shape.workers }, async (_, worker) => {
    while (!over && nowMs() < until) {
      let held;
      try {
        held = await contender.acquire(key, TTL);
      } catch {
        failures++;
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
await Promise.race([workers, new Promise((resolve) => setTimeout(resolve, Math.max(0, until - nowMs())))]);
over = true;
const report = sections.filter((s) => s.releasedAt <= until);
process.send!({ type: 'done', sections: report, failures } satisfies FromChild, () => process.exit(0));
