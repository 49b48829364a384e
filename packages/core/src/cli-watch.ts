/**
 * `redlock-nest watch`: live releases from the release-notice channels (the release script
 * publishes on the lock key's name, on every node), and live acquisitions and expiries from
 * keyspace notifications where the nodes have them on (`notify-keyspace-events K$x`).
 * A release or acquisition reaches every node: it is printed once, with how many nodes saw it.
 */
import { Redis } from 'ioredis';
import { escapeGlob } from './node-commands.js';

/** One line of `watch` output. */
export interface WatchEvent {
  readonly at: string;
  readonly event: 'acquired' | 'released' | 'expired';
  readonly resource: string;
  /** How many nodes reported it within the grouping window. */
  readonly nodes: number;
}

export interface WatchOptions {
  readonly urls: readonly string[];
  readonly keyPrefix: string;
  readonly json: boolean;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

const GROUP_MS = 50;
const KEYSPACE_EVENTS: Record<string, WatchEvent['event']> = { set: 'acquired', expired: 'expired' };

/** Starts watching; resolves with a function that stops it (closing every connection). */
export async function watch(options: WatchOptions): Promise<() => Promise<void>> {
  const { keyPrefix } = options;
  const lockPrefix = `${keyPrefix}lock:`;
  const groups = new Map<string, { event: WatchEvent['event']; resource: string; nodes: Set<number>; timer: NodeJS.Timeout }>();
  const report = (event: WatchEvent['event'], key: string, node: number): void => {
    if (!key.startsWith(lockPrefix)) return;
    const resource = key.slice(lockPrefix.length);
    const id = `${event} ${resource}`;
    const group = groups.get(id);
    if (group) {
      group.nodes.add(node);
      return;
    }
    const timer = setTimeout(() => {
      const g = groups.get(id)!;
      groups.delete(id);
      const line: WatchEvent = { at: new Date().toISOString(), event, resource, nodes: g.nodes.size };
      options.out(
        options.json ? JSON.stringify(line) : `${line.at}  ${event.padEnd(8)}  ${resource}  (${line.nodes}/${options.urls.length} node(s))`,
      );
    }, GROUP_MS);
    groups.set(id, { event, resource, nodes: new Set([node]), timer });
  };

  const clients = options.urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableReadyCheck: false }));
  let noKeyspace = 0;
  await Promise.all(
    clients.map(async (client, i) => {
      client.on('error', () => undefined); // reconnects on its own; the CLI reports nodes via `check`
      await client.connect();
      const flags = await client.call('CONFIG', 'GET', 'notify-keyspace-events').then(
        (reply) => (Array.isArray(reply) ? String(reply[1]) : ''),
        () => '',
      );
      if (!flags.includes('K') || !(flags.includes('$') || flags.includes('A'))) noKeyspace++;
      client.on('pmessage', (pattern: string, channel: string, message: string) => {
        if (pattern.startsWith('__keyspace')) {
          const event = KEYSPACE_EVENTS[message];
          if (event) report(event, channel.slice(channel.indexOf(':') + 1), i);
        } else {
          report('released', channel, i);
        }
      });
      await client.psubscribe(`${escapeGlob(lockPrefix)}*`, `__keyspace@*__:${escapeGlob(lockPrefix)}*`);
    }),
  );
  if (noKeyspace > 0) {
    options.err(
      `note: ${noKeyspace} node(s) have no keyspace notifications: acquisitions are shown only where notify-keyspace-events includes K$ (CONFIG SET notify-keyspace-events K$x); releases always are.`,
    );
  }
  options.err(`watching ${options.urls.length} node(s) for ${lockPrefix}* (Ctrl-C to stop)`);
  return async () => {
    for (const g of groups.values()) clearTimeout(g.timer);
    groups.clear();
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  };
}
