import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * Everything the service reads from the environment, parsed once at startup.
 * A class (not an interface) so Nest can inject it by type.
 */
export class AppConfig {
  /** What holds the locks (LOCK_ENGINE): `redis` (Redlock over REDLOCK_NODES, default) or `etcd` (ETCD_HOSTS). */
  readonly lockEngine!: LockEngineName;
  /** Independent Redis masters for Redlock (REDLOCK_NODES, comma-separated redis:// URLs); empty on etcd. */
  readonly nodes!: readonly string[];
  /** Client URLs of the etcd members (ETCD_HOSTS, comma-separated http:// URLs); empty on Redis. */
  readonly etcdHosts!: readonly string[];
  /** HTTP port (PORT, default 3000). */
  readonly port!: number;
  /** Interface to listen on (HOST, default 127.0.0.1: nothing is exposed to the network by default). */
  readonly host!: string;
  /** The orders database file (ORDERS_DB, default sample-app/data/orders.sqlite). */
  readonly ordersDb!: string;
  /** Name of this instance in logs, payments and /health (INSTANCE_ID, default host-pid). */
  readonly instanceId!: string;
  /** LOCKS=off disables locking and fencing: the baseline of `npm run demo -- --no-locks`. */
  readonly locksEnabled!: boolean;
  /** TTL of the payment lock in ms (PAYMENT_LOCK_TTL_MS, default 5000); auto-extended while held. */
  readonly paymentLockTtlMs!: number;
  /** Simulated card authorization latency before the capture, in ms (PAYMENT_AUTH_MS, default 15). */
  readonly paymentAuthMs!: number;
  /**
   * Per-node answer timeout of the lock client (REDLOCK_NODE_TIMEOUT_MS, default 500 like the
   * core; the core caps it at a third of the TTL). It includes event-loop lag, so a busy
   * process needs more than the network round trip.
   */
  readonly nodeTimeoutMs!: number;
  /** Orders 1..N created at startup when missing (SEED_ORDERS, default 100; 0 = none). */
  readonly seedOrders!: number;
  /**
   * The data Redis of the fenced price list (DATA_REDIS, a redis:// URL): a server that is NOT one
   * of the lock nodes (the resource is separate from the lock service). Unset: the price list
   * answers 503 naming this variable. `npm start` starts one next to its lock nodes.
   */
  readonly dataRedis!: string | undefined;
  /**
   * Simulated work inside the price-list, export and hot-counter sections, in ms (SECTION_WORK_MS,
   * default 20): long enough that concurrent requests visibly overlap (or queue) in the demo.
   */
  readonly sectionWorkMs!: number;
  /** Mount the lock dashboard at /locks/dashboard (DASHBOARD, `on` by default; `off` leaves it out). */
  readonly dashboard!: boolean;
  /**
   * A bearer token that opens the dashboard from anywhere (DASHBOARD_TOKEN). Unset: the dashboard
   * answers only direct loopback requests (see DashboardAccessGuard).
   */
  readonly dashboardToken!: string | undefined;
  /** Demo hook: freeze once inside the payment of this order (DEMO_FREEZE_ORDER). */
  readonly freezeOrder!: number | undefined;
  /** Demo hook: the freeze lasts until this file exists (DEMO_FREEZE_GATE). */
  readonly freezeGate!: string | undefined;

  constructor(values: AppConfig) {
    Object.assign(this, values);
  }
}

/** The lock engines the app can run on. */
export type LockEngineName = 'redis' | 'etcd';

/** Thrown for an invalid environment; the message names the variable and the fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Default database file, next to the package (sample-app/data/), wherever the process was started. */
export function defaultOrdersDb(): string {
  // Compiled to dist/app/, sources in src/app/: both are two levels below the package.
  return fileURLToPath(new URL('../../data/orders.sqlite', import.meta.url));
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max = 2 ** 31 - 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}".`);
  }
  return value;
}

/** Parses REDLOCK_NODES: comma-separated redis:// or rediss:// URLs, at least one. */
export function parseNodes(raw: string | undefined): string[] {
  const nodes = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (nodes.length === 0) {
    throw new ConfigError(
      'REDLOCK_NODES is not set. Give it comma-separated redis:// URLs of independent Redis servers, ' +
        'e.g. REDLOCK_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379 ' +
        '(or run `npm start`, which starts 5 local nodes when REDLOCK_NODES is unset).',
    );
  }
  for (const url of nodes) {
    if (!/^rediss?:\/\/[^/\s]+/.test(url)) {
      throw new ConfigError(`REDLOCK_NODES entry "${url}" is not a redis:// or rediss:// URL.`);
    }
  }
  return nodes;
}

/** Parses LOCK_ENGINE: `redis` (default) or `etcd`. */
export function parseLockEngine(raw: string | undefined): LockEngineName {
  const engine = (raw ?? '').trim().toLowerCase() || 'redis';
  if (engine !== 'redis' && engine !== 'etcd') {
    throw new ConfigError(`LOCK_ENGINE must be "redis" (Redlock over REDLOCK_NODES) or "etcd" (ETCD_HOSTS), got "${raw}".`);
  }
  return engine;
}

/** Parses ETCD_HOSTS: comma-separated http:// or https:// client URLs of etcd members, with ports. */
export function parseEtcdHosts(raw: string | undefined): string[] {
  const hosts = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (hosts.length === 0) {
    throw new ConfigError(
      'LOCK_ENGINE=etcd needs ETCD_HOSTS: comma-separated client URLs of the etcd members, e.g. ' +
        'ETCD_HOSTS=http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379 ' +
        '(or run `LOCK_ENGINE=etcd npm start`, which starts a local 3-member cluster when ETCD_HOSTS is unset).',
    );
  }
  for (const url of hosts) {
    if (!/^https?:\/\/[^/\s]+:\d+\/?$/.test(url)) {
      throw new ConfigError(`ETCD_HOSTS entry "${url}" is not an http:// or https:// client URL with its port, like http://10.0.0.1:2379.`);
    }
  }
  return hosts;
}

/** Parses DATA_REDIS: one redis:// or rediss:// URL, or nothing. */
export function parseDataRedis(raw: string | undefined): string | undefined {
  const url = raw?.trim();
  if (!url) return undefined;
  if (!/^rediss?:\/\/[^/\s]+/.test(url)) {
    throw new ConfigError(`DATA_REDIS must be one redis:// or rediss:// URL of a Redis that is not a lock node, got "${raw}".`);
  }
  return url;
}

/** Builds the configuration from environment variables (see sample-app/README.md). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const freeze = env.DEMO_FREEZE_ORDER ? int(env, 'DEMO_FREEZE_ORDER', 0, 1) : undefined;
  const lockEngine = parseLockEngine(env.LOCK_ENGINE);
  return new AppConfig({
    lockEngine,
    nodes: lockEngine === 'redis' ? parseNodes(env.REDLOCK_NODES) : [],
    etcdHosts: lockEngine === 'etcd' ? parseEtcdHosts(env.ETCD_HOSTS) : [],
    port: int(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    ordersDb: env.ORDERS_DB || defaultOrdersDb(),
    instanceId: env.INSTANCE_ID || `${hostname()}-${process.pid}`,
    locksEnabled: (env.LOCKS ?? 'on').toLowerCase() !== 'off',
    paymentLockTtlMs: int(env, 'PAYMENT_LOCK_TTL_MS', 5_000, 10),
    paymentAuthMs: int(env, 'PAYMENT_AUTH_MS', 15, 0),
    nodeTimeoutMs: int(env, 'REDLOCK_NODE_TIMEOUT_MS', 500, 1),
    seedOrders: int(env, 'SEED_ORDERS', 100, 0),
    dataRedis: parseDataRedis(env.DATA_REDIS),
    sectionWorkMs: int(env, 'SECTION_WORK_MS', 20, 0, 60_000),
    dashboard: (env.DASHBOARD ?? 'on').toLowerCase() !== 'off',
    dashboardToken: env.DASHBOARD_TOKEN || undefined,
    freezeOrder: freeze,
    freezeGate: env.DEMO_FREEZE_GATE || undefined,
  });
}
