/**
 * `redlock-nest watch`: live releases from the release-notice channels (the release scripts
 * publish on the lock key's name and on a semaphore slot's, on every node), and live
 * acquisitions, expiries and queues from keyspace notifications where the nodes have them on
 * (`notify-keyspace-events K$xz`): locks and write locks, readers joining and leaving, semaphore
 * permits by slot, waiting writers, fair queues, processes queued for a wake-up.
 * An event reaches every node: it is printed once, with how many nodes saw it.
 */
import { Redis } from 'ioredis';
import { escapeGlob } from '../nodes/node-commands.js';
import { describeNodeError } from '../nodes/node-state.js';
import { labelOf } from '../nodes/redis-client.js';

/** One line of `watch` output. */
export interface WatchEvent {
  readonly at: string;
  readonly event: 'acquired' | 'released' | 'expired' | 'waiting' | 'queued' | 'dequeued';
  readonly resource: string;
  /**
   * What the event is about: `lock` (a plain or write lock's key, or the readers' marker),
   * `read` (a reader), `write` (a waiting writer), `semaphore` (a permit), `fair` (a fair
   * queue's waiter), `wake` (a process queued for the addressed wake-up).
   */
  readonly primitive: 'lock' | 'read' | 'write' | 'semaphore' | 'fair' | 'wake';
  /** The permit's slot, for a semaphore. */
  readonly permit?: number;
  /** How many nodes reported it within the grouping window. */
  readonly nodes: number;
}

type WatchKind = WatchEvent['primitive'];

/** The key kinds watched: key kind in the name → primitive, and which keyspace events mean what. */
const KINDS: Record<string, { primitive: WatchKind; events: Record<string, WatchEvent['event']> }> = {
  lock: { primitive: 'lock', events: { set: 'acquired', expired: 'expired' } },
  semaphore: { primitive: 'semaphore', events: { set: 'acquired', expired: 'expired' } },
  'rw-readers': { primitive: 'read', events: { zadd: 'acquired', zrem: 'released' } },
  'rw-writers': { primitive: 'write', events: { zadd: 'waiting', zrem: 'dequeued' } },
  'fair-queue': { primitive: 'fair', events: { zadd: 'queued', zrem: 'dequeued' } },
  waiters: { primitive: 'wake', events: { zadd: 'queued', zpopmin: 'dequeued', zrem: 'dequeued' } },
};

/** What a key of the Redlock's layout is: its primitive, resource and slot; undefined for keys not watched. */
export function describeKey(
  key: string,
  keyPrefix: string,
): { primitive: WatchKind; kind: string; resource: string; permit?: number } | undefined {
  if (!key.startsWith(keyPrefix)) return undefined;
  const rest = key.slice(keyPrefix.length);
  const colon = rest.indexOf(':');
  const kind = rest.slice(0, colon);
  const spec = colon > 0 && Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
  if (!spec) return undefined;
  let resource = rest.slice(colon + 1);
  let permit: number | undefined;
  if (kind === 'semaphore') {
    const last = resource.lastIndexOf(':');
    if (last < 0) return undefined;
    permit = Number(resource.slice(last + 1));
    resource = resource.slice(0, last);
  }
  // Hash-tagged on Redis Cluster nodes: `lock:{order:42}`.
  if (resource.startsWith('{') && resource.endsWith('}')) resource = resource.slice(1, -1);
  return { primitive: spec.primitive, kind, resource, ...(permit !== undefined ? { permit } : {}) };
}

export interface WatchOptions {
  readonly urls: readonly string[];
  readonly keyPrefix: string;
  readonly json: boolean;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

const GROUP_MS = 50;

/** Starts watching; resolves with a function that stops it (closing every connection). */
export async function watch(options: WatchOptions): Promise<() => Promise<void>> {
  const { keyPrefix } = options;
  const groups = new Map<string, { nodes: Set<number>; timer: NodeJS.Timeout }>();
  /** `event` on `key` seen by `node` (a keyspace event name, or 'released' for a release notice). */
  const report = (keyEvent: string, key: string, node: number): void => {
    const what = describeKey(key, keyPrefix);
    if (!what) return;
    const event =
      keyEvent === 'released'
        ? what.primitive === 'lock' || what.primitive === 'semaphore'
          ? 'released'
          : undefined
        : KINDS[what.kind]!.events[keyEvent];
    if (!event) return;
    const id = `${event} ${key}`;
    const group = groups.get(id);
    if (group) {
      group.nodes.add(node);
      return;
    }
    const timer = setTimeout(() => {
      const g = groups.get(id)!;
      groups.delete(id);
      const line: WatchEvent = {
        at: new Date().toISOString(),
        event,
        resource: what.resource,
        primitive: what.primitive,
        ...(what.permit !== undefined ? { permit: what.permit } : {}),
        nodes: g.nodes.size,
      };
      const about = what.primitive === 'semaphore' ? `semaphore permit ${what.permit}` : what.primitive;
      options.out(
        options.json
          ? JSON.stringify(line)
          : `${line.at}  ${event.padEnd(8)}  ${what.resource}  ${about}  (${line.nodes}/${options.urls.length} node(s))`,
      );
    }, GROUP_MS);
    groups.set(id, { nodes: new Set([node]), timer });
  };

  const clients = options.urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableReadyCheck: false }));
  let noKeyspace = 0;
  /** Why each node that could not be watched failed: the connection's real cause (ECONNREFUSED …), not ioredis' words. */
  const failed: string[] = [];
  await Promise.all(
    clients.map(async (client, i) => {
      let cause: unknown;
      client.on('error', (err: unknown) => void (cause ??= err)); // reconnects on its own; the CLI reports nodes via `check`
      try {
        await client.connect();
      } catch (err) {
        failed.push(`${labelOf(client, i)}: ${describeNodeError(cause ?? err)}`);
        client.disconnect(); // stops its reconnects: the process can exit
        return;
      }
      const flags = await client.call('CONFIG', 'GET', 'notify-keyspace-events').then(
        (reply) => (Array.isArray(reply) ? String(reply[1]) : ''),
        () => '',
      );
      if (!flags.includes('K') || !((flags.includes('$') && flags.includes('z')) || flags.includes('A'))) noKeyspace++;
      client.on('pmessage', (pattern: string, channel: string, message: string) => {
        if (pattern.startsWith('__keyspace')) report(message, channel.slice(channel.indexOf(':') + 1), i);
        else report('released', channel, i);
      });
      const prefix = escapeGlob(keyPrefix);
      await client.psubscribe(`${prefix}lock:*`, `${prefix}semaphore:*`, `__keyspace@*__:${prefix}*`);
    }),
  );
  if (failed.length === clients.length) throw new Error(`no node could be watched: ${failed.join('; ')}`);
  for (const f of failed) options.err(`note: not watching ${f}`);
  if (noKeyspace > 0) {
    options.err(
      `note: ${noKeyspace} node(s) lack keyspace notifications: acquisitions, readers and queues are shown only where notify-keyspace-events includes K$z (CONFIG SET notify-keyspace-events K$xz); releases of locks and permits always are.`,
    );
  }
  options.err(`watching ${options.urls.length - failed.length} node(s) for ${keyPrefix}* (Ctrl-C to stop)`);
  return async () => {
    for (const g of groups.values()) clearTimeout(g.timer);
    groups.clear();
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  };
}
