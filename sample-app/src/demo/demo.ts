/**
 * `npm run demo`: 5 Redis nodes (or, with `--etcd`, a 3-member etcd cluster), 3 instances of
 * the sample app as separate processes, thousands of concurrent payment requests, and faults:
 * a Redis node killed and another paused half-way (on etcd: the leader killed), one app
 * instance frozen inside a payment for longer than the lock TTL. The figure that matters comes
 * from the database at the end: orders paid twice.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@redlock-nest/redis-process';
import { OrdersRepository } from '../orders/orders.repository.js';
import { AppInstance } from './app-instance.js';
import { DEMO_USAGE, parseDemoArgs, type DemoOptions } from './demo-options.js';
import { startDemoStore, type DemoStore } from './demo-store.js';
import { runFreezeScenario, type FreezeReport } from './freeze-scenario.js';
import { HttpClient } from './http-client.js';
import { LoadGenerator, planRequests } from './load-generator.js';
import { Progress } from './progress.js';
import { buildSummary, formatSummary } from './summary.js';
import { formatTour, runTour, type TourReport } from './tour/tour.js';
import { DASHBOARD_PATH } from '../dashboard/dashboard-access.guard.js';

const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../data/demo', import.meta.url));

/** Everything started, so every exit path stops all of it. */
class Stage {
  store: DemoStore | undefined;
  readonly apps: AppInstance[] = [];
  constructor(private readonly gate: string) {}
  async teardown(): Promise<void> {
    // A frozen instance cannot even handle SIGTERM: open its gate first.
    writeFileSync(this.gate, '');
    await Promise.allSettled(this.apps.map((a) => a.stop()));
    await this.store?.stop();
  }
}

async function startApps(stage: Stage, o: DemoOptions, dataDir: string, db: string, freezeOrder: number, gate: string): Promise<void> {
  const store = stage.store!;
  const ports = await Promise.all(Array.from({ length: o.instances }, () => freePort()));
  const started = await Promise.allSettled(
    ports.map((port, i) =>
      AppInstance.start(
        `instance-${i + 1}`,
        port,
        {
          ...store.env,
          ORDERS_DB: db,
          LOCKS: o.locks ? 'on' : 'off',
          PAYMENT_LOCK_TTL_MS: String(o.ttlMs),
          // The demo seeds the orders itself.
          SEED_ORDERS: '0',
          PAYMENT_AUTH_MS: '10',
          // Long enough that concurrent sections of the primitives tour visibly overlap or queue.
          SECTION_WORK_MS: '25',
          RECONCILE_CRON: '*/2 * * * * *',
          // The last instance is the one that will be frozen inside a payment.
          ...(i === o.instances - 1 ? { DEMO_FREEZE_ORDER: String(freezeOrder), DEMO_FREEZE_GATE: gate } : {}),
        },
        join(dataDir, `instance-${i + 1}.log`),
      ),
    ),
  );
  for (const s of started) if (s.status === 'fulfilled') stage.apps.push(s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

async function main(): Promise<number> {
  const o = parseDemoArgs(process.argv.slice(2), process.env);
  if (o.help) {
    console.log(DEMO_USAGE);
    return 0;
  }
  const dataDir = resolve(o.dataDir ?? DEFAULT_DATA_DIR);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const db = join(dataDir, 'orders.sqlite');
  const gate = join(dataDir, 'freeze.gate');
  // The freeze scenario gets an order of its own, outside the general load.
  const freezeOrder = o.orders + 1;
  const repo = new OrdersRepository(db);
  repo.seed(o.orders + 1);
  repo.close();

  const locking = o.engine === 'etcd' ? 'etcd' : 'Redlock';
  console.log(`redlock-nest race demo (${o.locks ? `locks ON: ${locking} + fencing tokens` : 'locks OFF: the baseline'})`);
  const stage = new Stage(gate);
  const stopOnSignal = (signal: NodeJS.Signals): void => {
    console.log(`\n${signal}: stopping everything the demo started…`);
    void stage.teardown().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);

  const started = performance.now();
  try {
    stage.store = await startDemoStore(o);
    console.log(`  ${stage.store.banner}`);
    await startApps(stage, o, dataDir, db, freezeOrder, gate);
    console.log(`  ${o.instances} app instances: ${stage.apps.map((a) => `${a.name} ${a.url} (pid ${a.pid})`).join(', ')}`);
    console.log(`  orders database: ${db} (SQLite, WAL, shared by all instances)`);
    const listed = o.engine === 'redis' ? 'the locks of every instance' : 'the etcd members';
    console.log(`  lock dashboard (${listed}): ${stage.apps[0]!.url}${DASHBOARD_PATH}`);
    let tour: TourReport | undefined;
    if (o.locks && o.engine === 'redis') {
      console.log('\nDriving every primitive on all instances at once (watch the dashboard)…');
      tour = await runTour(
        stage.apps.map((a) => a.url),
        stage.store.env.REDLOCK_NODES!.split(','),
        o.short,
      );
      console.log(formatTour(tour));
    }
    console.log(
      `  ${o.requests} payment requests for ${o.orders} orders, ${o.concurrency} concurrent per instance; lock TTL ${o.ttlMs} ms\n`,
    );

    const load = new LoadGenerator(
      planRequests(o.orders, o.requests, o.instances),
      stage.apps.map((a) => a.url),
      o.concurrency,
    );
    const progress = new Progress(load.tally, load.total);
    const faults: string[] = [];
    const store = stage.store;
    let freeze: Promise<FreezeReport> | undefined;
    let degraded: Promise<void> = Promise.resolve();
    let recovered: Promise<void> = Promise.resolve();
    const clients = stage.apps.map((a) => new HttpClient(a.url, 2));
    const timeline: Array<{ at: number; run: () => void }> = [
      {
        at: 0.25,
        run: () => {
          const frozen = stage.apps.length - 1;
          progress.event(
            `freezing ${stage.apps[frozen]!.name} inside the payment of order ${freezeOrder} (longer than the ${o.ttlMs} ms TTL)`,
          );
          freeze = runFreezeScenario({
            orderId: freezeOrder,
            frozen: { instance: stage.apps[frozen]!, client: clients[frozen]! },
            others: stage.apps.slice(0, frozen).map((instance, i) => ({ instance, client: clients[i]! })),
            gateFile: gate,
            tally: load.tally,
            patienceMs: Math.max(20_000, o.ttlMs * 10),
          }).then((report) => {
            progress.event(`freeze over: ${report.detail}`);
            return report;
          });
        },
      },
      {
        at: 0.5,
        run: () => {
          // The 80 % step waits for this one: the etcd leader must be known and killed first.
          degraded = store.degrade().then(
            (injected) => {
              faults.push(...injected);
              progress.event(`${injected.join('; ')}: a majority is left`);
            },
            (err: unknown) => progress.event(`fault injection failed: ${err instanceof Error ? err.message : String(err)}`),
          );
        },
      },
      {
        at: 0.8,
        run: () => {
          recovered = degraded
            .then(() => store.recover())
            .then(
              (line) => progress.event(line),
              (err: unknown) => progress.event(`recovery failed: ${err instanceof Error ? err.message : String(err)}`),
            );
        },
      },
    ];
    load.tally.onRecord = () => {
      while (timeline.length && load.tally.done >= timeline[0]!.at * load.total) timeline.shift()!.run();
    };
    progress.start();
    await load.run();
    const freezeReport = await freeze;
    await recovered;
    progress.stop();
    load.close();
    for (const c of clients) c.close();
    if (freezeReport)
      faults.push(`${freezeReport.frozen} frozen for ${freezeReport.frozenMs} ms inside the payment of order ${freezeOrder}`);

    await stage.teardown();
    const ledgerDb = new OrdersRepository(db);
    const ledger = ledgerDb.report();
    const cronRuns = ledgerDb.jobRuns('reconcile').length;
    ledgerDb.close();
    const summary = buildSummary({
      mode: o.locks ? 'locks' : 'no-locks',
      engine: o.engine,
      nodes: o.nodes,
      instances: o.instances,
      durationMs: Math.round(performance.now() - started),
      tally: load.tally,
      ledger,
      cronRuns,
      faults,
      freeze: freezeReport,
      tour,
    });
    console.log(formatSummary(summary));
    console.log(`  logs and database: ${dataDir}`);
    if (o.json) console.log(`DEMO-SUMMARY ${JSON.stringify(summary)}`);
    return summary.exitCode;
  } catch (err) {
    console.error(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}`);
    console.error(`  logs: ${dataDir}`);
    await stage.teardown();
    return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
