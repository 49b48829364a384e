import { checkClusterOverlap, isClusterEntry } from './cluster-input.js';
import { RedlockArgumentError } from '../errors/errors.js';
import { isNodeRedisClient, nodeRedisAddress } from './node-redis-client.js';
import { looksLikeNodeRedisCluster } from './node-redis-cluster-shape.js';

/**
 * Checks of the `nodes[]` entries that need no connection: an object that is neither a
 * supported client (ioredis, node-redis, in-memory) nor ioredis options is refused (ioredis would take it for options and
 * connect to localhost:6379), and two entries naming the same server are refused (a lock
 * would count that server twice toward its quorum).
 */

/**
 * Every option key ioredis 5 and 6 accept for a standalone or Sentinel connection
 * (`RedisOptions` = common, Sentinel and standalone connection options).
 */
const IOREDIS_OPTION_KEYS: ReadonlySet<string> = new Set([
  // connection
  'host',
  'port',
  'path',
  'family',
  'tls',
  'username',
  'password',
  'db',
  'connectTimeout',
  'disconnectTimeout',
  'keepAlive',
  'noDelay',
  'connectionName',
  'disableClientInfo',
  'clientInfoTag',
  'Connector',
  'socketTimeout',
  // behaviour
  'retryStrategy',
  'commandTimeout',
  'blockingTimeout',
  'blockingTimeoutGrace',
  'autoResubscribe',
  'autoResendUnfulfilledCommands',
  'reconnectOnError',
  'readOnly',
  'stringNumbers',
  'protocol',
  'replyMapping',
  'monitor',
  'maxRetriesPerRequest',
  'maxLoadingRetryTime',
  'enableAutoPipelining',
  'autoPipeliningIgnoredCommands',
  'offlineQueue',
  'commandQueue',
  'enableOfflineQueue',
  'enableReadyCheck',
  'lazyConnect',
  'scripts',
  'himportFieldsets',
  'keyPrefix',
  'showFriendlyErrorStack',
  // Sentinel
  'sentinels',
  'name',
  'role',
  'sentinelUsername',
  'sentinelPassword',
  'sentinelRetryStrategy',
  'sentinelReconnectStrategy',
  'preferredSlaves',
  'sentinelCommandTimeout',
  'enableTLSForSentinelMode',
  'sentinelTLS',
  'natMap',
  'updateSentinels',
  'sentinelMaxConnections',
  'failoverDetector',
]);

/** The accepted forms, named in every refusal. */
const ACCEPTED =
  'Pass a redis:// (or rediss://) URL, ioredis options ({ host, port, password, tls, ... }), an ioredis client or Cluster, or a node-redis client (createClient, createCluster)';

/** Options of other clients that users pass by habit, and what to do instead. */
const FOREIGN_KEYS: Readonly<Record<string, string>> = {
  url: "that is node-redis' createClient({ url }) shape: pass the URL string itself",
  socket: "that is node-redis' createClient({ socket }) shape: use { host, port, tls } instead",
};

function kindOf(value: object): string {
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
  return name && name !== 'Object' ? `an instance of ${name}` : 'an object';
}

function isPlainPrototype(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as object | null;
  // Realm-independent: the prototype is some realm's Object.prototype, or there is none.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Refuses an object that is not an ioredis client and not valid ioredis options, naming what it
 * got. Called for every object that has no `evalsha` (the ioredis client test).
 * @throws {RedlockArgumentError}
 */
export function checkNodeOptions(value: object, index: number): void {
  const where = `nodes[${index}]`;
  const v = value as Record<string, unknown>;
  if (looksLikeNodeRedisCluster(value)) {
    throw new RedlockArgumentError(
      `${where} got an object with sendCommand and masters, like a node-redis cluster (createCluster), but without its connect, ` +
        `duplicate, sSubscribe and _options.rootNodes: taken for ioredis options, it would silently connect to localhost:6379. ` +
        `${ACCEPTED}, e.g. createCluster({ rootNodes: [{ url: 'redis://host:7000' }] }).`,
    );
  }
  if (typeof v.sendCommand === 'function' && ('isOpen' in v || 'isReady' in v)) {
    throw new RedlockArgumentError(
      `${where} got an object with sendCommand/isOpen, like a node-redis client, but without its connect, on, duplicate ` +
        `and subscribe methods: taken for ioredis options, it would silently connect to localhost:6379. ${ACCEPTED}, e.g. 'redis://host:6379'.`,
    );
  }
  if (typeof v.then === 'function') {
    throw new RedlockArgumentError(`${where} got a Promise (or thenable). Await it first. ${ACCEPTED}.`);
  }
  if (value instanceof URL || (typeof v.href === 'string' && typeof v.protocol === 'string' && typeof v.hostname === 'string')) {
    throw new RedlockArgumentError(`${where} got a URL object. Pass its string (url.href) instead.`);
  }
  const unknown = Object.keys(value).filter((key) => !IOREDIS_OPTION_KEYS.has(key));
  if (unknown.length > 0) {
    const hints = unknown.filter((k) => FOREIGN_KEYS[k]).map((k) => `"${k}": ${FOREIGN_KEYS[k]}`);
    const shown =
      unknown
        .slice(0, 5)
        .map((k) => `"${k}"`)
        .join(', ') + (unknown.length > 5 ? ', …' : '');
    throw new RedlockArgumentError(
      `${where} got ${kindOf(value)} that is neither an ioredis client nor ioredis options: ` +
        `${shown} ${unknown.length === 1 ? 'is not an ioredis option' : 'are not ioredis options'}` +
        `${hints.length > 0 ? ` (${hints.join('; ')})` : ''}. ${ACCEPTED}.`,
    );
  }
  if (!isPlainPrototype(value) && Object.keys(value).length === 0) {
    throw new RedlockArgumentError(`${where} got ${kindOf(value)} with no ioredis option and no client methods. ${ACCEPTED}.`);
  }
}

/** Names that reach this machine's loopback interface: one server whichever is used. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);

function canonicalHost(host: string): string {
  const h = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return LOOPBACK.has(h) ? 'loopback' : h;
}

/** Where a `nodes[]` entry connects, for comparing entries; undefined when it is not known without connecting (Sentinel). */
export function serverAddress(input: unknown): string | undefined {
  if (typeof input === 'string') {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      return undefined; // refused with its own message when the client is created
    }
    return `${canonicalHost(url.hostname || 'localhost')}:${url.port || 6379}`;
  }
  if (typeof input !== 'object' || input === null) return undefined;
  const nodeRedis = isNodeRedisClient(input);
  const isClient = nodeRedis || typeof (input as { evalsha?: unknown }).evalsha === 'function';
  // An ioredis client keeps its (defaults-merged) options; options are read as they are.
  const o = ((nodeRedis ? nodeRedisAddress(input) : isClient ? (input as { options?: unknown }).options : input) ?? {}) as {
    host?: unknown;
    port?: unknown;
    path?: unknown;
    sentinels?: unknown;
  };
  // A client (or wrapper) that does not say where it connects is not compared: unknown, not localhost.
  if (isClient && o.host === undefined && o.port === undefined && o.path === undefined) return undefined;
  if (Array.isArray(o.sentinels) && o.sentinels.length > 0) return undefined;
  if (typeof o.path === 'string' && o.path !== '') return `unix:${o.path}`;
  const host = typeof o.host === 'string' && o.host !== '' ? o.host : 'localhost';
  const port = o.port === undefined || o.port === null || o.port === '' ? 6379 : Number(o.port);
  return `${canonicalHost(host)}:${port}`;
}

/** How a node is shown in the refusal: its address as configured, never credentials. */
function shown(input: unknown, address: string): string {
  if (typeof input === 'string') {
    try {
      const url = new URL(input);
      return `${url.hostname}:${url.port || 6379}`;
    } catch {
      return address;
    }
  }
  const o = (isNodeRedisClient(input) ? nodeRedisAddress(input) : ((input as { options?: unknown }).options ?? input)) as {
    host?: unknown;
    port?: unknown;
    path?: unknown;
  };
  if (typeof o.path === 'string' && o.path !== '') return o.path;
  return `${typeof o.host === 'string' && o.host !== '' ? o.host : 'localhost'}:${typeof o.port === 'number' || typeof o.port === 'string' ? o.port : 6379}`;
}

/**
 * Refuses two entries that reach the same server (same host and port; `localhost`, `127.0.0.1`
 * and `::1` count as one host; the database number does not make a different server). Servers
 * behind different names are caught at startup by the independence check (same `run_id`).
 * @throws {RedlockArgumentError}
 */
export function checkDistinctNodes(nodes: readonly unknown[]): void {
  // Objects that are no client are refused for what they are first, not as "the same server" (localhost:6379).
  nodes.forEach((input, i) => {
    if (
      typeof input === 'object' &&
      input !== null &&
      !Array.isArray(input) &&
      typeof (input as { evalsha?: unknown }).evalsha !== 'function' &&
      !isNodeRedisClient(input) &&
      !isClusterEntry(input)
    ) {
      checkNodeOptions(input, i);
    }
  });
  const seen = new Map<string, number>();
  nodes.forEach((input, i) => {
    const address = isClusterEntry(input) ? undefined : serverAddress(input);
    if (address === undefined) return;
    const first = seen.get(address);
    if (first === undefined) {
      seen.set(address, i);
      return;
    }
    throw new RedlockArgumentError(
      `nodes[${first}] (${shown(nodes[first], address)}) and nodes[${i}] (${shown(input, address)}) are the same Redis ` +
        'server: a lock would count it twice toward the quorum, so it would stop being a majority of independent servers. ' +
        'List each independent server once.',
    );
  });
  if (nodes.some(isClusterEntry)) checkClusterOverlap(nodes, serverAddress);
}
