/**
 * What `checkNodes()` asks one node: INFO, latency, the rate of its clock, its
 * persistence settings, and whether the connected user may run what the library sends.
 * Every probe is bounded by a timeout; a node that does not answer is reported, not waited for.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isClusterClient } from '../nodes/cluster-client.js';
import type { KeyNames } from '../nodes/hash-slot.js';
import type { LockNode } from '../nodes/lock-node.js';

/** SHA1 of `return 1`: EVALSHA answers NOSCRIPT when allowed, NOPERM when not. */
const CHECK_SCRIPT_SHA = createHash('sha1').update('return 1').digest('hex');

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
  /** Why TIME could not be sampled (e.g. not in the user's ACL). */
  readonly clockError?: string;
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
 * Runs each command the library sends (plain, so a refusal names the command: inside a
 * script Redis does not say which one it refused) on throw-away keys
 * (`<prefix>lock:redlock-check:<random>`, deleted again, with a 10 s TTL should the delete
 * fail), and collects every refusal. SUBSCRIBE cannot be tried on a command connection:
 * it is asked with ACL DRYRUN when the user may.
 */
async function probeAcl(node: LockNode, names: KeyNames): Promise<{ denied: string[]; unknown?: string }> {
  const id = `redlock-check:${randomBytes(6).toString('hex')}`;
  // Named as a resource's keys are: on Redis Cluster nodes both carry the same tag, so the DEL of both is one slot.
  const lockKey = names.lock(id);
  const fenceKey = names.fence(id);
  // A cluster node's notices go by sharded pub/sub: probe what the library sends there.
  const sharded = isClusterClient(node.client);
  const denied = new Set<string>();
  // Plain nodes also queue waiters on a key's arbiter (scripts/wake-queue.ts).
  const waitersKey = names.key('waiters', id);
  const queue: Array<Array<string | number>> = sharded
    ? []
    : [
        ['ZADD', waitersKey, 0, 'redlock-check'],
        ['ZCARD', waitersKey],
        ['ZSCORE', waitersKey, 'redlock-check'],
        ['ZREM', waitersKey, 'redlock-check'],
        ['ZPOPMIN', waitersKey],
      ];
  const tries: Array<Array<string | number>> = [
    ['SET', lockKey, 'check', 'PX', 10_000, 'NX'],
    ['PTTL', lockKey],
    ['GET', lockKey],
    ['PEXPIRE', lockKey, 10_000],
    ['INCR', fenceKey],
    [sharded ? 'SPUBLISH' : 'PUBLISH', lockKey, 'redlock-check'],
    ...queue,
    ['EVAL', 'return 1', 0],
    ['EVALSHA', CHECK_SCRIPT_SHA, 0],
    ['DEL', lockKey, fenceKey],
    ...(sharded ? [] : [['DEL', waitersKey]]),
  ];
  for (const command of tries) {
    try {
      await send(node, ...command);
    } catch (err) {
      const refused = deniedCommand(err, String(command[0]).toLowerCase());
      if (refused) denied.add(refused);
      else if (!/NOSCRIPT/.test(message(err))) throw err;
    }
  }
  let unknown: string | undefined;
  try {
    const user = String(await send(node, 'ACL', 'WHOAMI'));
    for (const command of sharded ? ['ssubscribe', 'sunsubscribe'] : ['subscribe', 'unsubscribe']) {
      const reply = String(await send(node, 'ACL', 'DRYRUN', user, command, lockKey));
      if (reply !== 'OK') denied.add(command);
    }
  } catch (err) {
    unknown = `SUBSCRIBE could not be verified (${message(err).split('\n')[0]}); waiters poll instead of waking on release notices without it`;
  }
  return { denied: [...denied].sort(), ...(unknown ? { unknown } : {}) };
}

/** The server clock's advance over the local monotonic clock's, between two TIME samples. */
async function clockRate(node: LockNode, timeoutMs: number, sampleMs: number): Promise<{ rate: number; uncertainty: number }> {
  const first = await bounded(sampleTime(node), timeoutMs);
  await new Promise((resolve) => setTimeout(resolve, sampleMs));
  const second = await bounded(sampleTime(node), timeoutMs);
  const localSpan = second.local - first.local;
  // Each sample's true moment lies within its round trip; TIME itself has 1 µs steps.
  return { rate: (second.server - first.server) / localSpan, uncertainty: (first.rtt / 2 + second.rtt / 2 + 0.002) / localSpan };
}

/** Asks one node everything the check reports. `clockSampleMs` is the interval between the two TIME samples. */
export async function probeNode(node: LockNode, names: KeyNames, timeoutMs: number, clockSampleMs: number): Promise<NodeFacts> {
  const label = node.label;
  try {
    await bounded(node.connect(), timeoutMs);
    const info = await bounded(node.client.info('default'), timeoutMs);
    const rtts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      // PTTL of a key the lock user may read: PING is not in the least-privilege ACL.
      await bounded(send(node, 'PTTL', names.lock('redlock-check')), timeoutMs);
      rtts.push(performance.now() - start);
    }
    rtts.sort((a, b) => a - b);
    const rate = await clockRate(node, timeoutMs, clockSampleMs).catch((err: unknown) => ({ error: message(err) }));
    const [appendfsync, save, acl] = await Promise.all([
      configValue(node, 'appendfsync'),
      configValue(node, 'save'),
      bounded(probeAcl(node, names), timeoutMs * 4).catch((err: unknown) => ({ denied: undefined, unknown: message(err) })),
    ]);
    return {
      node: label,
      info,
      latencyMs: rtts[1]!,
      ...('error' in rate ? { clockError: rate.error } : { clockRate: rate.rate, clockRateUncertainty: rate.uncertainty }),
      ...(appendfsync !== undefined ? { appendfsync } : {}),
      ...(save !== undefined ? { save } : {}),
      ...(acl.denied ? { denied: acl.denied } : {}),
      ...(acl.unknown ? { aclUnknown: acl.unknown } : {}),
    };
  } catch (err) {
    // The connection's real cause (ECONNREFUSED 127.0.0.1:6390), as the app logs it, not ioredis' "Connection is closed.".
    return { node: label, error: node.connection.describe(err) };
  }
}
