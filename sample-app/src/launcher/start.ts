/**
 * `npm start`: the sample app with everything it needs. When REDLOCK_NODES is not set,
 * starts 5 independent local redis-server processes first (an embedded default, so
 * nothing has to be configured); with LOCK_ENGINE=etcd and no ETCD_HOSTS, a local 3-member
 * etcd cluster instead. Ctrl-C (or SIGTERM) stops the app and every process this launcher
 * started.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { ConfigError, loadConfig, parseEtcdHosts, parseLockEngine, parseNodes } from '../app/app-config.js';
import { createApp, listen, PortInUseError } from '../app/bootstrap.js';
import { DASHBOARD_PATH, dashboardAccess } from '../dashboard/dashboard-access.guard.js';
import { EtcdCluster, portIsFree, RedisCluster, RedisServerMissingError } from '@redlock-nest/redis-process';

const EMBEDDED_NODES = 5;
const EMBEDDED_ETCD_MEMBERS = 3;

/** The lock store the launcher started (stopped on exit), or none when the environment names one. */
interface Embedded {
  readonly what: string;
  readonly detail: string;
  stop(): Promise<void>;
}

/** Starts the lock store the environment asks for, unless it names an existing one. */
async function lockStore(env: NodeJS.ProcessEnv): Promise<{ env: NodeJS.ProcessEnv; urls: string[]; embedded?: Embedded }> {
  if (parseLockEngine(env.LOCK_ENGINE) === 'etcd') {
    const external = env.ETCD_HOSTS?.trim();
    if (external) {
      console.log(`Using the etcd members from ETCD_HOSTS (${parseEtcdHosts(external).length}).`);
      return { env, urls: parseEtcdHosts(external) };
    }
    console.log(`ETCD_HOSTS is not set: starting a local ${EMBEDDED_ETCD_MEMBERS}-member etcd cluster…`);
    // etcd's own default timings (100 ms heartbeat, 1 s election): no spurious elections under load.
    const etcd = await EtcdCluster.start({ members: EMBEDDED_ETCD_MEMBERS, heartbeatMs: 100, electionMs: 1_000, detached: true });
    const embedded = { what: `${EMBEDDED_ETCD_MEMBERS} etcd members`, detail: 'local etcd processes', stop: () => etcd.stop() };
    return { env: { ...env, ETCD_HOSTS: etcd.hosts.join(',') }, urls: etcd.hosts, embedded };
  }
  const external = env.REDLOCK_NODES?.trim();
  if (external) {
    console.log(`Using the Redis nodes from REDLOCK_NODES (${parseNodes(external).length}).`);
    return { env, urls: parseNodes(external) };
  }
  // One more server, unless DATA_REDIS names one: the price list's data Redis, never a lock node.
  // Throw-away like the nodes, so its fences and the nodes' fencing counters start over together.
  const data = env.DATA_REDIS?.trim() ? 0 : 1;
  console.log(`REDLOCK_NODES is not set: starting ${EMBEDDED_NODES} local Redis nodes${data ? ' and a data Redis' : ''}…`);
  const redis = await RedisCluster.start(EMBEDDED_NODES + data, { detached: true });
  const urls = redis.urls.slice(0, EMBEDDED_NODES);
  const embedded = {
    what: `${EMBEDDED_NODES + data} Redis processes`,
    detail: `local redis-server ${redis.version} processes${data ? `; price-list data Redis ${redis.urls[EMBEDDED_NODES]!}` : ''}`,
    stop: () => redis.stop(),
  };
  const dataEnv = data ? { DATA_REDIS: redis.urls[EMBEDDED_NODES]! } : {};
  return { env: { ...env, REDLOCK_NODES: urls.join(','), ...dataEnv }, urls, embedded };
}

async function main(): Promise<void> {
  // Validate everything (port included) before starting any process.
  const preliminary = loadConfig({
    ...process.env,
    REDLOCK_NODES: process.env.REDLOCK_NODES?.trim() || 'redis://127.0.0.1:1',
    ETCD_HOSTS: process.env.ETCD_HOSTS?.trim() || 'http://127.0.0.1:1',
  });
  if (preliminary.port !== 0 && !(await portIsFree(preliminary.port, preliminary.host))) {
    throw new PortInUseError(preliminary.port, preliminary.host);
  }

  let embedded: Embedded | undefined;
  let app: INestApplication | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      await app?.close().catch((err: unknown) => console.error(err));
      await embedded?.stop();
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      // npm forwards the terminal's Ctrl-C too: the second signal just waits for the first.
      if (cleaning) return;
      console.log(`\n${signal}: stopping the app${embedded ? ` and the ${embedded.what}` : ''}…`);
      void cleanup().then(() => {
        console.log('Stopped.');
        process.exit(0);
      });
    });
  }

  try {
    const store = await lockStore(process.env);
    embedded = store.embedded;
    const nodes = store.urls;
    const config = loadConfig(store.env);
    app = await createApp(config);
    const url = await listen(app, config);
    const kind = config.lockEngine === 'etcd' ? 'etcd members' : 'lock nodes';
    const lines = [
      '',
      `redlock-nest sample app listening on ${url}`,
      ...(config.dashboard ? [`  lock dashboard: ${url}${DASHBOARD_PATH}  (${dashboardAccess(config)})`] : []),
      `  ${kind} (${nodes.length}, quorum ${Math.floor(nodes.length / 2) + 1}): ${nodes.join(' ')}`,
      ...(embedded ? [`  (${embedded.detail}, stopped on exit)`] : []),
      `  orders database: ${config.ordersDb}`,
      '',
      'Try:',
      `  curl -s -X POST ${url}/orders/1/pay     # 201 paid, then 200 already paid`,
      `  curl -s ${url}/orders/1`,
      `  curl -s ${url}/catalog/sku-1                  # read lock: reads run together`,
      `  curl -s -X PUT -H 'content-type: application/json' -d '{"priceCents":1999}' ${url}/catalog/sku-1/price   # write lock`,
      `  curl -s ${url}/tenants/acme/orders.csv        # semaphore: 2 exports per tenant at once, then 409`,
      `  curl -s -X POST ${url}/batches/nightly/job-1  # fair lock: jobs of a queue run in order of arrival`,
      `  curl -s ${url}/prices                      # read lock on the price list: reads run together`,
      `  curl -s -X PUT -H 'content-type: application/json' -d '{"priceCents":1299}' ${url}/prices/sku-1   # write lock + fencing token`,
      `  curl -s -X POST ${url}/counters/hot/increment # a hot key: local hand-offs (cohorting)`,
      `  curl -s ${url}/counters/hot                # its value, and how many acquisitions were hand-offs`,
      `  curl -s ${url}/health`,
      `  curl -s ${url}/locks/events`,
      '',
      'Press Ctrl-C to stop.',
    ];
    console.log(lines.join('\n'));
  } catch (err) {
    await cleanup();
    throw err;
  }
}

main().catch((err: unknown) => {
  const etcdMissing = err instanceof Error && err.message.startsWith('etcd is not installed');
  const known = err instanceof ConfigError || err instanceof PortInUseError || err instanceof RedisServerMissingError || etcdMissing;
  console.error(known ? `\n${err.message}` : err);
  if (err instanceof RedisServerMissingError) {
    console.error('Or set REDLOCK_NODES to your own independent Redis servers (comma-separated redis:// URLs).');
  }
  if (etcdMissing) console.error('Or set ETCD_HOSTS to the client URLs of your etcd members (comma-separated http:// URLs).');
  process.exit(1);
});
