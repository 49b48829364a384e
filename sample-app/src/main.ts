/**
 * One instance of the service: `node dist/main.js` with REDLOCK_NODES set, or LOCK_ENGINE=etcd
 * and ETCD_HOSTS (see README).
 * `npm start` uses launcher/start.ts instead, which also starts local Redis nodes.
 */
import 'reflect-metadata';
import { ConfigError, loadConfig, type AppConfig } from './app/app-config.js';
import { createApp, listen, PortInUseError } from './app/bootstrap.js';
import { DASHBOARD_PATH } from './dashboard/dashboard-access.guard.js';

/** Where the locks live, as the start line prints it. */
function lockNodes(config: AppConfig): string {
  return config.lockEngine === 'etcd' ? `etcd ${config.etcdHosts.join(', ')}` : config.nodes.join(', ');
}

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await createApp(config);
  // SIGTERM/SIGINT close the app: locks released, Redis connections and the database closed.
  app.enableShutdownHooks();
  const url = await listen(app, config);
  console.log(`[${config.instanceId}] listening on ${url} (lock nodes: ${lockNodes(config)}; locks ${config.locksEnabled ? 'on' : 'OFF'})`);
  if (config.dashboard) console.log(`[${config.instanceId}] lock dashboard: ${url}${DASHBOARD_PATH}`);
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof PortInUseError;
  console.error(known ? err.message : err);
  process.exit(1);
});
