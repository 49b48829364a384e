/**
 * `npm start`: the sample app with everything it needs. When REDLOCK_NODES is not set,
 * starts 5 independent local redis-server processes first (an embedded default, so
 * nothing has to be configured). Ctrl-C (or SIGTERM) stops the app and every Redis
 * process this launcher started.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { ConfigError, loadConfig, parseNodes } from '../app/app-config.js';
import { createApp, listen, PortInUseError } from '../app/bootstrap.js';
import { portIsFree, RedisCluster, RedisServerMissingError } from '@redlock-nest/redis-process';

const EMBEDDED_NODES = 5;

async function main(): Promise<void> {
  // Validate everything (port included) before starting any process.
  const external = process.env.REDLOCK_NODES?.trim();
  const preliminary = loadConfig({ ...process.env, REDLOCK_NODES: external || 'redis://127.0.0.1:1' });
  if (preliminary.port !== 0 && !(await portIsFree(preliminary.port, preliminary.host))) {
    throw new PortInUseError(preliminary.port, preliminary.host);
  }

  let redis: RedisCluster | undefined;
  let app: INestApplication | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      await app?.close().catch((err: unknown) => console.error(err));
      await redis?.stop();
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      // npm forwards the terminal's Ctrl-C too: the second signal just waits for the first.
      if (cleaning) return;
      console.log(`\n${signal}: stopping the app${redis ? ` and the ${redis.servers.length} Redis nodes` : ''}…`);
      void cleanup().then(() => {
        console.log('Stopped.');
        process.exit(0);
      });
    });
  }

  try {
    let nodes: string[];
    if (external) {
      nodes = parseNodes(external);
      console.log(`Using the Redis nodes from REDLOCK_NODES (${nodes.length}).`);
    } else {
      console.log(`REDLOCK_NODES is not set: starting ${EMBEDDED_NODES} local Redis nodes…`);
      redis = await RedisCluster.start(EMBEDDED_NODES, { detached: true });
      nodes = redis.urls;
    }
    const config = loadConfig({ ...process.env, REDLOCK_NODES: nodes.join(',') });
    app = await createApp(config);
    const url = await listen(app, config);
    const lines = [
      '',
      `redlock-nest sample app listening on ${url}`,
      `  lock nodes (${nodes.length}, quorum ${Math.floor(nodes.length / 2) + 1}): ${nodes.join(' ')}`,
      ...(redis ? [`  (local redis-server ${redis.version} processes, stopped on exit)`] : []),
      `  orders database: ${config.ordersDb}`,
      '',
      'Try:',
      `  curl -s -X POST ${url}/orders/1/pay     # 201 paid, then 200 already paid`,
      `  curl -s ${url}/orders/1`,
      `  curl -s ${url}/catalog/sku-1                  # read lock: reads run together`,
      `  curl -s -X PUT -H 'content-type: application/json' -d '{"priceCents":1999}' ${url}/catalog/sku-1/price   # write lock`,
      `  curl -s ${url}/tenants/acme/orders.csv        # semaphore: 2 exports per tenant at once, then 409`,
      `  curl -s -X POST ${url}/batches/nightly/job-1  # fair lock: jobs of a queue run in order of arrival`,
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
  const known = err instanceof ConfigError || err instanceof PortInUseError || err instanceof RedisServerMissingError;
  console.error(known ? `\n${err.message}` : err);
  if (err instanceof RedisServerMissingError) {
    console.error('Or set REDLOCK_NODES to your own independent Redis servers (comma-separated redis:// URLs).');
  }
  process.exit(1);
});
