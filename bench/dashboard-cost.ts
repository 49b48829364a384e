/**
 * What the lock dashboard costs the nodes: Redis commands per second per node (INFO
 * commandstats; commands a script runs are counted, as Redis counts them) with no page open,
 * then with one page polling its data every second, as the page does by default.
 *
 *   npm run bench:dashboard [-- --seconds=10 --locks=20 --fences=1000 --other-keys=10000]
 *
 * The nodes hold `locks` locks of another process, `fences` fencing counters of resources no
 * longer held (they outlive their locks) and `other-keys` keys of the application: SCAN walks
 * every key of a node, matching or not.
 */
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '@redlock-nest/core';
import { RedlockDashboardModule, RedlockModule } from '@redlock-nest/nestjs';
import { Redis } from 'ioredis';
import { RedisCluster } from '@redlock-nest/redis-process';

/**
 * The measurement's own commands, not the dashboard's. INFO stays counted: the page's node probe
 * sends one per node per poll (the measurement's single INFO commandstats per node adds 0.1/s at 10 s).
 */
const ADMIN = new Set(['config|resetstat', 'client|setinfo', 'client|setname', 'hello', 'select', 'ping', 'mset']);

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    locks: { type: 'string', default: '20' },
    fences: { type: 'string', default: '1000' },
    'other-keys': { type: 'string', default: '10000' },
  },
});
const seconds = Number(values.seconds);
const lockCount = Number(values.locks);

async function commandstats(admin: readonly Redis[]): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const c of admin) {
    for (const m of (await c.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (!ADMIN.has(m[1]!)) calls.set(m[1]!, (calls.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  return calls;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Commands per second per node over `seconds`, while `during` runs. */
async function measure(admin: readonly Redis[], during: (until: number) => Promise<void>) {
  await Promise.all(admin.map((c) => c.config('RESETSTAT')));
  const end = performance.now() + seconds * 1000;
  await during(end);
  const calls = await commandstats(admin);
  const total = [...calls.values()].reduce((a, b) => a + b, 0);
  const perNode = (n: number) => Math.round((n / admin.length / seconds) * 10) / 10;
  return { perNode: perNode(total), byCommand: [...calls].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${perNode(n)}`) };
}

async function main(): Promise<void> {
  const cluster = await RedisCluster.start(3);
  const admin = cluster.urls.map((url) => new Redis(url));
  const other = new Redlock(cluster.urls);
  let app: INestApplication | undefined;
  try {
    for (const c of admin) {
      for (let i = 0; i < Number(values.fences); i += 500) {
        await c.mset(
          ...Array.from({ length: Math.min(500, Number(values.fences) - i) }, (_, j) => [`redlock:fence:gone-${i + j}`, '1']).flat(),
        );
      }
      for (let i = 0; i < Number(values['other-keys']); i += 500) {
        await c.mset(
          ...Array.from({ length: Math.min(500, Number(values['other-keys']) - i) }, (_, j) => [`app:key-${i + j}`, 'x']).flat(),
        );
      }
    }
    for (let i = 0; i < lockCount; i++) await other.acquire(`order:${i}`, 600_000, { fencing: true });

    @Module({
      imports: [
        RedlockModule.forRoot({ nodes: cluster.urls, isGlobal: true }),
        RedlockDashboardModule.forRoot({ path: '/locks', public: true }),
      ],
    })
    class AppModule {}
    app = await NestFactory.create(AppModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');

    const closed = await measure(admin, async (end) => void (await sleep(end - performance.now())));
    let found = 0;
    const took: number[] = [];
    const open = await measure(admin, async (end) => {
      await fetch(`${url}/locks`).then((r) => r.text());
      while (performance.now() < end) {
        const next = performance.now() + 1000;
        const start = performance.now();
        const body = (await (await fetch(`${url}/locks/data`)).json()) as { locks: unknown[] };
        took.push(performance.now() - start);
        found = body.locks.length;
        await sleep(Math.max(0, Math.min(next, end) - performance.now()));
      }
    });
    console.log(`nodes: 3, keys per node: ${lockCount} locks + ${values.fences} old fencing counters + ${values['other-keys']} others`);
    console.log(`page closed: ${closed.perNode} commands/s per node (${closed.byCommand.join(', ') || 'none'})`);
    const median = took.sort((a, b) => a - b)[Math.floor(took.length / 2)]!;
    console.log(`page open, ${took.length} polls of 1 s (${found} locks shown): ${open.perNode} commands/s per node`);
    console.log(`  one poll (GET /locks/data): median ${median.toFixed(1)} ms`);
    console.log(`  by command: ${open.byCommand.join(', ')}`);
  } finally {
    await app?.close();
    await other.close();
    await Promise.all(admin.map((c) => c.quit()));
    await cluster.stop();
  }
}

await main();
