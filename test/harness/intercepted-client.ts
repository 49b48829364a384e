/**
 * A node client for tests that stand between the library and a real ioredis connection: every
 * command the library sends goes through `through()`, which may drop it, delay its reply or fail
 * it; the rest (status, INFO, QUIT) passes straight on.
 */
import type { NodeClient } from '@redlock-nest/core';
import type { Redis } from 'ioredis';

export abstract class InterceptedClient implements NodeClient {
  constructor(protected readonly real: Redis) {}

  /** Sends one command (`name`: evalsha, eval, set, pttl) as the test decides. */
  protected abstract through<T>(name: string, send: () => Promise<T>): Promise<T>;

  get status(): string {
    return this.real.status;
  }
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.through('evalsha', () => this.real.evalsha(sha, numKeys, ...args));
  }
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.through('eval', () => this.real.eval(script, numKeys, ...args));
  }
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown> {
    return this.through('set', () => this.real.set(key, value, px, ms, nx));
  }
  pttl(key: string): Promise<number> {
    return this.through('pttl', () => this.real.pttl(key));
  }
  info(section: string): Promise<string> {
    return this.real.info(section);
  }
  quit(): Promise<unknown> {
    return this.real.quit();
  }
  disconnect(): void {
    this.real.disconnect();
  }
}
