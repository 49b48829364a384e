/**
 * Semaphores: ours (`{ permits }`, N slots each a Redlock mutex) against redis-semaphore's
 * `RedlockSemaphore`, both on the same 5 nodes, at library defaults (its retry interval, our
 * release notices). Uncontended: one permit acquire + release at a time. Contended: W workers
 * in one process on a semaphore of P permits, each holding a few ms, back to back.
 */
import { Redis } from 'ioredis';
import { RedlockSemaphore } from 'redis-semaphore';
import { Redlock } from '@redlock-nest/core';
import type { BenchNodes } from '../nodes.js';
import { median, percentile, rotate } from '../stats.js';
import { printTable, ratio } from '../table.js';

const TTL = 10_000;
const OURS = 'redlock-nest';
const PEER = 'redis-semaphore RedlockSemaphore';
type Name = typeof OURS | typeof PEER;

interface Permits {
  acquire(resource: string, permits: number): Promise<{ release(): Promise<unknown> }>;
  close(): Promise<void>;
}

function create(name: Name, urls: readonly string[]): Permits {
  if (name === OURS) {
    const redlock = new Redlock([...urls], { retry: { retries: Infinity } });
    return {
      acquire: (resource, permits) => redlock.acquire(resource, TTL, { permits }),
      close: () => redlock.close(),
    };
  }
  const clients = urls.map((url) => new Redis(url));
  return {
    async acquire(resource, permits) {
      // refreshInterval 0: no background refresh timer, like our plain acquire.
      const s = new RedlockSemaphore(clients, resource, permits, { lockTimeout: TTL, acquireTimeout: 600_000, refreshInterval: 0 });
      await s.acquire();
      return { release: () => s.release() };
    },
    close: async () => {
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
}

interface Contended {
  readonly sectionsPerSec: number;
  readonly meanWaitMs: number;
  readonly p99WaitMs: number;
  readonly maxHolders: number;
  readonly commandsPerSection: number;
}

async function uncontended(p: Permits, ops: number, key: string): Promise<{ p50Us: number; opsPerSec: number }> {
  const samples: number[] = [];
  const start = performance.now();
  for (let i = 0; i < ops; i++) {
    const t0 = performance.now();
    await (await p.acquire(key, 5)).release();
    samples.push((performance.now() - t0) * 1000);
  }
  return { p50Us: percentile(samples, 50), opsPerSec: (ops * 1000) / (performance.now() - start) };
}

async function contended(
  p: Permits,
  nodes: BenchNodes,
  workers: number,
  permits: number,
  holdMs: number,
  durationMs: number,
  key: string,
): Promise<Contended> {
  await (await p.acquire(key, permits)).release();
  await nodes.resetStats();
  const waits: number[] = [];
  let inside = 0;
  let maxHolders = 0;
  const end = performance.now() + durationMs;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const held = await p.acquire(key, permits);
        waits.push(performance.now() - t0);
        inside++;
        maxHolders = Math.max(maxHolders, inside);
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        inside--;
        await held.release();
      }
    }),
  );
  const elapsed = performance.now() - start;
  const commands = await nodes.commands();
  return {
    sectionsPerSec: (waits.length * 1000) / elapsed,
    meanWaitMs: waits.reduce((a, b) => a + b, 0) / Math.max(1, waits.length),
    p99WaitMs: percentile(waits, 99),
    maxHolders,
    commandsPerSection: commands / Math.max(1, waits.length),
  };
}

/** Runs both contenders round by round (order rotated) and prints the two tables. */
export async function semaphoreBench(
  nodes: BenchNodes,
  cfg: { rounds: number; ops: number; durationMs: number },
): Promise<{ uncontended: unknown; contended: unknown; ratios: { latencyVsPeer: number; rateVsPeer: number; commandsVsPeer: number } }> {
  const names: Name[] = [OURS, PEER];
  const workers = 12;
  const permits = 3;
  const holdMs = 2;
  const lat = new Map<Name, Array<{ p50Us: number; opsPerSec: number }>>();
  const cont = new Map<Name, Contended[]>();
  for (let round = 0; round < cfg.rounds; round++) {
    for (const name of rotate(names, round)) {
      process.stderr.write(`[bench] semaphore round ${round + 1}/${cfg.rounds}: ${name}\n`);
      const p = create(name, nodes.urls);
      try {
        lat.set(name, [...(lat.get(name) ?? []), await uncontended(p, cfg.ops, `semlat:${round}:${name}`)]);
        cont.set(name, [
          ...(cont.get(name) ?? []),
          await contended(p, nodes, workers, permits, holdMs, cfg.durationMs, `semcont:${round}:${name}`),
        ]);
      } finally {
        await p.close();
      }
    }
  }
  const peerP50 = median(lat.get(PEER)!.map((r) => r.p50Us));
  const latRows = names.map((name) => {
    const p50 = median(lat.get(name)!.map((r) => r.p50Us));
    return { library: name, 'p50 µs': p50, 'ops/s': median(lat.get(name)!.map((r) => r.opsPerSec)), 'speed vs peer': ratio(peerP50, p50) };
  });
  printTable('Semaphore, uncontended (one permit of 5: acquire + release, TTL 10 s; speed = peer p50 / p50)', latRows);
  const peerRate = median(cont.get(PEER)!.map((r) => r.sectionsPerSec));
  const peerCmds = median(cont.get(PEER)!.map((r) => r.commandsPerSection));
  const contRows = names.map((name) => {
    const r = cont.get(name)!;
    const rate = median(r.map((x) => x.sectionsPerSec));
    const cmds = median(r.map((x) => x.commandsPerSection));
    return {
      library: name,
      'sections/s': rate,
      'vs peer': ratio(rate, peerRate),
      'mean wait ms': median(r.map((x) => x.meanWaitMs)),
      'p99 wait ms': median(r.map((x) => x.p99WaitMs)),
      'cmds/section': cmds,
      'cmds vs peer': ratio(cmds, peerCmds),
      'max holders': Math.max(...r.map((x) => x.maxHolders)),
    };
  });
  printTable(
    `Semaphore, contended (${workers} workers, ${permits} permits, ${holdMs} ms held, library defaults; max holders must be ≤ ${permits})`,
    contRows,
  );
  const ours = cont.get(OURS)!;
  const ratios = {
    latencyVsPeer: peerP50 / median(lat.get(OURS)!.map((r) => r.p50Us)),
    rateVsPeer: median(ours.map((x) => x.sectionsPerSec)) / peerRate,
    commandsVsPeer: median(ours.map((x) => x.commandsPerSection)) / peerCmds,
  };
  return { uncontended: latRows, contended: contRows, ratios };
}
