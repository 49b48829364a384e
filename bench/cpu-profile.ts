/**
 * The V8 CPU profiles of `bench:profile` and `bench:nest-profile`: one profiler session around
 * the measured loops, self time grouped by frame and by where the code lives, and the tables
 * and `.cpuprofile` files both print. `--cpu-prof` records the same, but for the whole process.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { printTable } from './table.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** What `Profiler.stop` returns. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: our Nest layer, our core, Nest, Express, rxjs, the Redis client, Node, V8. */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : 'native';
  if (url.includes('/packages/nestjs/')) return 'redlock-nest/nestjs';
  if (url.includes('/packages/core/')) return 'redlock-nest/core';
  if (url.includes('/@nestjs/')) return '@nestjs';
  if (url.includes('/rxjs/')) return 'rxjs';
  if (url.includes('/ioredis/') || url.includes('/@ioredis/') || url.includes('/redis-parser/')) return 'ioredis';
  if (url.includes('/node_modules/')) return `other (${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? '?'})`;
  if (url.startsWith('node:')) return 'node';
  return 'other';
}

/** Self time (µs) per frame and per area, idle excluded. */
function summarize(profile: CpuProfile): { frames: Map<string, number>; areas: Map<string, number>; totalUs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const frames = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') return;
    const us = profile.timeDeltas[i] ?? 0;
    const file = url.split('/').slice(-1)[0] ?? '';
    const frame = `${functionName || '(anonymous)'} ${file}${file ? `:${lineNumber + 1}` : ''}`;
    frames.set(frame, (frames.get(frame) ?? 0) + us);
    const a = area(url, functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
    totalUs += us;
  });
  return { frames, areas, totalUs };
}

/** A profiler session sampling every 100 µs; `record` profiles one measured loop. */
export async function openProfiler(): Promise<{
  record<T>(run: () => Promise<T>): Promise<{ result: T; profile: CpuProfile }>;
  close(): void;
}> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  return {
    async record(run) {
      await session.post('Profiler.start');
      const result = await run();
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      return { result, profile };
    },
    close: () => session.disconnect(),
  };
}

/**
 * Writes `profile` to `.bench-results/<file>-<time>.cpuprofile` (open it in Chrome DevTools) and
 * prints its self time by area and its top frames, per `unit` (`ops` operations: µs/op, µs/call).
 */
export function reportProfile(profile: CpuProfile, o: { title: string; file: string; ops: number; unit: string; top: number }): void {
  mkdirSync('.bench-results', { recursive: true });
  writeFileSync(`.bench-results/${o.file.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
  const { frames, areas, totalUs } = summarize(profile);
  const share = (us: number): string => `${((100 * us) / totalUs).toFixed(1)}%`;
  const perOp = `µs/${o.unit}`;
  printTable(
    `${o.title}: self time by area (busy time only)`,
    [...areas].sort((a, b) => b[1] - a[1]).map(([where, us]) => ({ area: where, [perOp]: us / o.ops, share: share(us) })),
  );
  printTable(
    `${o.title}: top ${o.top} frames by self time`,
    [...frames]
      .sort((a, b) => b[1] - a[1])
      .slice(0, o.top)
      .map(([frame, us]) => ({ frame, [perOp]: us / o.ops, share: share(us) })),
  );
}
