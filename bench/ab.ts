/**
 * `npm run bench:ab -- --base=<another checkout> [--ops=5000 --rounds=12]`: this checkout's core
 * against another checkout's build of it (say, main before a hot-path change), on the uncontended
 * path (acquire + release, one worker, 5 local nodes), interleaved with the raw floor in one
 * process, the order reversed every other round. Prints each one's median wall and CPU time per
 * operation and its ratio to the floor: the before-and-after a change to the hot path cites.
 * The other checkout must be built (`npm ci && npm run build` there).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redlock as OurRedlock } from '@redlock-nest/core';
import { createContender } from './contenders.js';
import type { Contender } from './contender.js';
import { BenchNodes } from './nodes.js';
import { median } from './stats.js';
import { printTable } from './table.js';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const base = arg('base');
if (!base) {
  console.error('usage: npm run bench:ab -- --base=<path of another built checkout> [--ops=5000] [--rounds=12]');
  process.exit(2);
}
const OPS = Number(arg('ops') ?? 5_000);
const ROUNDS = Number(arg('rounds') ?? 12);

type RedlockClass = typeof OurRedlock;

/** A Redlock class as a contender: acquire + release on the clients it makes itself from URLs. */
function contenderOf(name: string, Redlock: RedlockClass, urls: readonly string[]): Contender {
  const redlock = new Redlock([...urls], { onWarning: () => undefined });
  return {
    name,
    acquire: async (resource, ttlMs) => redlock.acquire(resource, ttlMs),
    close: () => redlock.close(),
  };
}

const nodes = await BenchNodes.start(5);
try {
  const entry = pathToFileURL(resolve(base, 'packages/core/dist/index.js')).href;
  const { Redlock: BaseRedlock } = (await import(entry)) as { Redlock: RedlockClass };
  const contenders = [
    contenderOf('base', BaseRedlock, nodes.urls),
    contenderOf('this checkout', OurRedlock, nodes.urls),
    await createContender('raw ioredis floor', nodes.urls),
  ];
  const wall = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  for (const c of contenders) for (let i = 0; i < 2_000; i++) await (await c.acquire(`ab:warm:${c.name}`, 10_000)).release();
  for (let round = 0; round < ROUNDS; round++) {
    process.stderr.write(`[ab] round ${round + 1}/${ROUNDS}\n`);
    for (const c of round % 2 === 0 ? contenders : [...contenders].reverse()) {
      const key = `ab:${c.name}`;
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < OPS; i++) await (await c.acquire(key, 10_000)).release();
      const used = process.cpuUsage(cpu0);
      wall.set(c.name, [...(wall.get(c.name) ?? []), ((performance.now() - t0) * 1000) / OPS]);
      cpu.set(c.name, [...(cpu.get(c.name) ?? []), (used.user + used.system) / OPS]);
    }
  }
  for (const c of contenders) await c.close();
  const floor = median(wall.get('raw ioredis floor')!);
  printTable(
    `Uncontended acquire + release, one worker: medians of ${ROUNDS} interleaved rounds of ${OPS} (base: ${base})`,
    contenders.map((c) => ({
      build: c.name,
      'wall µs/op': median(wall.get(c.name)!),
      'CPU µs/op': median(cpu.get(c.name)!),
      'speed vs floor': floor / median(wall.get(c.name)!),
    })),
  );
} finally {
  await nodes.stop();
}
