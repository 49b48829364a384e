/**
 * Raw commands the restart rule and the node checks send outside `RedisClientLike`, and the
 * parsing of their replies.
 */
import type { LockNode } from './lock-node.js';

/** Generic command sending (ioredis' `call`), for commands outside `RedisClientLike`. */
export interface CommandClient {
  call?(command: string, ...args: Array<string | number>): Promise<unknown>;
  removeListener?(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** Reads one `name:value` line of an INFO reply. */
export function infoField(info: string, name: string): string | undefined {
  const match = new RegExp(`^${name}:(.*)$`, 'm').exec(info);
  return match?.[1]?.trim();
}

/** Decimal counters compared without losing precision (as the fence-raise script does). */
export function greater(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** Glob-escapes a key prefix for SCAN MATCH. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** `CONFIG GET appendfsync` is `always` (false when CONFIG is not allowed: not provable). */
export async function fsyncAlways(node: LockNode): Promise<boolean> {
  const client = node.client as CommandClient;
  if (!client.call) return false;
  try {
    const reply = await client.call('CONFIG', 'GET', 'appendfsync');
    return Array.isArray(reply) && String(reply[1]) === 'always';
  } catch {
    return false;
  }
}

/** Every fencing counter on `node` (SCAN, then GET), as decimal strings. */
export async function readCounters(node: LockNode, pattern: string): Promise<Map<string, string>> {
  const client = node.client as CommandClient;
  if (!client.call) throw new Error('the client has no generic command method (call)');
  const send = client.call.bind(client);
  const found = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = (await node.call(() => send('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1_000))) as [string, string[]];
    cursor = String(next);
    const values = await Promise.all(keys.map((key) => node.call(() => send('GET', key))));
    keys.forEach((key, i) => {
      const value = values[i];
      if (typeof value === 'string' && /^\d+$/.test(value)) found.set(key, value);
    });
  } while (cursor !== '0');
  return found;
}
