import { createHash } from 'node:crypto';
import type { RedisClientLike } from './redis-client.js';

/** A Lua script and its SHA1, sent with EVALSHA and re-sent with EVAL on NOSCRIPT. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Defines a script once, at module load; the SHA is computed here, never per call. */
export function defineScript(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/**
 * Runs scripts on one node's client by SHA, sending each in full (EVAL, which caches it) on its
 * first use since the connection was (re)established, and again on NOSCRIPT. @internal
 */
export class ScriptSender {
  /** Scripts sent in full since the connection was last (re)established (per master on a cluster). */
  private readonly sentInFull = new Set<string>();

  constructor(private readonly client: RedisClientLike) {}

  /** A reconnect may reach a restarted server with an empty script cache. */
  reset(): void {
    this.sentInFull.clear();
  }

  async send(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    // The first use of a script on a connection sends it in full. Relying on the NOSCRIPT
    // fallback alone reorders commands: the re-sent EVAL runs after whatever was sent
    // meanwhile, e.g. a release overtaking the acquire it must undo (leaving the key set).
    // A cluster node is several servers, each with its own cache: sent in full once per master.
    const master = (this.client as { masterOf?: (key: string) => string | undefined }).masterOf?.(keys[0] ?? '');
    const cached = master === undefined ? script.sha : `${script.sha}@${master}`;
    if (!this.sentInFull.has(cached)) {
      this.sentInFull.add(cached);
      // Marked before the reply so that commands sent meanwhile use the SHA (they run after it).
      // A failed send may not have cached it (a request lost before the wire, an error reply such
      // as OOM): the next use sends it in full again (harmless if it was cached). Else its EVALSHA
      // would meet NOSCRIPT, and the re-sent EVAL would run after the commands sent meanwhile:
      // an acquire after the release that must undo it, leaving the key set until its TTL.
      try {
        return await this.client.eval(script.source, keys.length, ...keys, ...args);
      } catch (err) {
        this.sentInFull.delete(cached);
        throw err;
      }
    }
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }
}
