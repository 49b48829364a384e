/**
 * What `checkNodes()` asks one node: INFO, latency, the rate of its clock, its
 * persistence settings, and whether the connected user may run what the library sends.
 * Every probe is bounded by a timeout; a node that does not answer is reported, not waited for.
 */
import { randomBytes } from 'node:crypto';
import type { LockNode } from './lock-node.js';
import { ACQUIRE_SCRIPT } from './scripts/acquire.js';
import { EXTEND_SCRIPT } from './scripts/extend.js';
import { RELEASE_SCRIPT } from './scripts/release.js';

/** ioredis' generic command method, for commands outside `RedisClientLike`. */
interface CommandClient {
  call?(command: string, ...args: Array<string | number>): Promise<unknown>;
}

/** Raw facts about one node; node-check.ts turns them into findings. */
export interface NodeFacts {
  readonly node: string;
  readonly error?: string;
  readonly info?: string;
  /** Median PING round trip, ms. */
  readonly latencyMs?: number;
  /** Server clock advance / local monotonic advance over the sample. */
  readonly clockRate?: number;
  /** How far off the rate may be from round-trip noise alone. */
  readonly clockRateUncertainty?: number;
  /** `CONFIG GET appendfsync`, when allowed. */
  readonly appendfsync?: string;
  /** `CONFIG GET save`, when allowed. */
  readonly save?: string;
  /** Commands the user may not run ('' entries never occur); undefined when unknown. */
  readonly denied?: readonly string[];
  /** Why the permissions could not be (fully) verified. */
  readonly aclUnknown?: string;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function bounded<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Sends a raw command through the node (connect on first use, close() waits for it). */
function send(node: LockNode, ...args: Array<string | number>): Promise<unknown> {
  const client = node.client as CommandClient;
  if (!client.call) return Promise.reject(new Error('the client has no generic command method (call)'));
  return node.call(() => client.call!(String(args[0]), ...args.slice(1)));
}

/** Server time (TIME) in ms, with the local monotonic time at the middle of the round trip. */
async function sampleTime(node: LockNode): Promise<{ server: number; local: number; rtt: number }> {
  const before = performance.now();
  const reply = (await send(node, 'TIME')) as [string, string];
  const after = performance.now();
  return { server: Number(reply[0]) * 1_000 + Number(reply[1]) / 1_000, local: (before + after) / 2, rtt: after - before };
}

async function configValue(node: LockNode, name: string): Promise<string | undefined> {
  try {
    const reply = await send(node, 'CONFIG', 'GET', name);
    return Array.isArray(reply) && reply.length >= 2 ? String(reply[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The command a NOPERM names, or the whole text. */
function deniedCommand(err: unknown, fallback: string): string | undefined {
  const text = message(err);
  if (!/NOPERM|can't run this command|no permissions/i.test(text)) return undefined;
  return /'([a-z|]+)' command/i.exec(text)?.[1]?.toLowerCase() ?? fallback;
}

/**
 * Runs what the library runs, on throw-away keys (`<prefix>lock:redlock-check:<random>`,
 * deleted again, with a 10 s TTL should the delete fail), and collects every refusal.
 * SUBSCRIBE cannot be tried on a command connection: it is asked with ACL DRYRUN.
 */
async function probeAcl(node: LockNode, keyPrefix: string): Promise<{ denied: string[]; unknown?: string }> {
  const id = `redlock-check:${randomBytes(6).toString('hex')}`;
  const lockKey = `${keyPrefix}lock:${id}`;
  const fenceKey = `${keyPrefix}fence:${id}`;
  const token = randomBytes(8).toString('hex');
  const denied = new Set<string>();
  const attempt = async (what: string, run: () => Promise<unknown>): Promise<void> => {
    try {
      await run();
    } catch (err) {
      const command = deniedCommand(err, what);
      if (command) denied.add(command);
      else if (!/NOSCRIPT/.test(message(err))) throw err;
    }
  };
  await attempt('set', () => send(node, 'SET', lockKey, token, 'PX', 10_000, 'NX'));
  await attempt('pttl', () => send(node, 'PTTL', lockKey));
  await attempt('eval', () => send(node, 'EVAL', EXTEND_SCRIPT.source, 1, lockKey, token, 10_000));
  await attempt('evalsha', () => send(node, 'EVALSHA', EXTEND_SCRIPT.sha, 1, lockKey, token, 10_000));
  await attempt('eval', () => send(node, 'EVAL', ACQUIRE_SCRIPT.source, 2, lockKey, fenceKey, token, 10_000, '1'));
  await attempt('eval', () => send(node, 'EVAL', RELEASE_SCRIPT.source, 1, lockKey, token));
  await attempt('del', () => send(node, 'DEL', fenceKey));
  let unknown: string | undefined;
  for (const [command, ...args] of [['subscribe', `${keyPrefix}lock:${id}`], ['unsubscribe', `${keyPrefix}lock:${id}`]] as const) {
    try {
      const user = String(await send(node, 'ACL', 'WHOAMI'));
      const reply = String(await send(node, 'ACL', 'DRYRUN', user, command, ...args));
      if (reply !== 'OK') denied.add(command);
    } catch (err) {
      unknown = `SUBSCRIBE could not be verified (${message(err).split('\n')[0]}); waiters fall back to polling without it`;
      break;
    }
  }
  return { denied: [...denied].sort(), ...(unknown ? { unknown } : {}) };
}

/** Asks one node everything the check reports. `clockSampleMs` is the interval between the two TIME samples. */
export async function probeNode(node: LockNode, keyPrefix: string, timeoutMs: number, clockSampleMs: number): Promise<NodeFacts> {
  const label = node.label;
  try {
    await bounded(node.connect(), timeoutMs);
    const info = await bounded(node.client.info('default'), timeoutMs);
    const rtts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      await bounded(send(node, 'PING'), timeoutMs);
      rtts.push(performance.now() - start);
    }
    rtts.sort((a, b) => a - b);
    const first = await bounded(sampleTime(node), timeoutMs);
    await new Promise((resolve) => setTimeout(resolve, clockSampleMs));
    const second = await bounded(sampleTime(node), timeoutMs);
    const localSpan = second.local - first.local;
    const [appendfsync, save, acl] = await Promise.all([
      configValue(node, 'appendfsync'),
      configValue(node, 'save'),
      bounded(probeAcl(node, keyPrefix), timeoutMs * 4).catch((err: unknown) => ({ denied: undefined, unknown: message(err) })),
    ]);
    return {
      node: label,
      info,
      latencyMs: rtts[1]!,
      clockRate: (second.server - first.server) / localSpan,
      // Each sample's true moment lies within its round trip; TIME itself has 1 µs steps.
      clockRateUncertainty: (first.rtt / 2 + second.rtt / 2 + 0.002) / localSpan,
      ...(appendfsync !== undefined ? { appendfsync } : {}),
      ...(save !== undefined ? { save } : {}),
      ...(acl.denied ? { denied: acl.denied } : {}),
      ...(acl.unknown ? { aclUnknown: acl.unknown } : {}),
    };
  } catch (err) {
    return { node: label, error: message(err) };
  }
}

