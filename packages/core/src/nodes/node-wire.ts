/**
 * The wire to one node as its LockNode sees it: the clocks of an exchange (SendSlot), the
 * commands written and not answered yet, and how a command is handed to the client.
 */
import { replyCode } from '../errors/error-hints.js';
import type { LuaScript } from './lua-script.js';
import type { RedisClientLike } from './redis-client.js';

/**
 * What a round knows of its exchange with one node (monotonic ms). The two clocks differ
 * once the exchange has a follow-up command: validity counts from the first write, the
 * node's timeout from the write of the command it is answering now.
 */
export interface SendSlot {
  /** When the exchange's first command was written, NaN until then: where a grant's validity starts. */
  sentAt: number;
  /**
   * When the command the round now waits for was written; NaN while it waits unwritten,
   * in our own backlog (then the node is charged only while it leaves an older command
   * unanswered). The node's timeout clock runs from here.
   */
  waitingSince: number;
}

/** The commands of one exchange with a node, in order; see {@link LockNode.exchange}. */
export interface NodeExchange {
  call<T>(command: (client: RedisClientLike) => Promise<T>): Promise<T>;
  run(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown>;
}

/** @internal One command written and not answered yet: when it was written, and the exchange it belongs to. */
export interface Wire {
  sentAt: number;
  readonly slot: SendSlot | undefined;
}

/** Records that a command of `slot`'s exchange was written at `at`. */
export function stamp(wire: Wire, at: number): void {
  wire.sentAt = at;
  const slot = wire.slot;
  if (!slot) return;
  if (!(slot.sentAt >= 0)) slot.sentAt = at;
  slot.waitingSince = at;
}

/**
 * Commands written to one node and not answered yet, at most this many; the others wait
 * client-side, unwritten. A burst of acquisitions in one tick then does not put
 * thousands of replies between a command and the reading of its own reply (time that is
 * ours, not the node's). 128 keeps a local node's pipeline full: a reply takes
 * microseconds to read, the round trip tens of them.
 */
export const IN_FLIGHT_WINDOW = 128;

/** Gives `command` to the client; a synchronous throw becomes a rejection. */
export function handOver<T>(command: (client: RedisClientLike) => Promise<T>, client: RedisClientLike): Promise<T> {
  try {
    return command(client);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A Redis error reply (`ERR …`, `NOSCRIPT …`): the node answered. Not a client-side timeout or a lost connection. */
export function isReplyError(err: unknown): boolean {
  return err instanceof Error && replyCode(err.message) !== undefined;
}
