/**
 * Nothing the library says (errors, warnings, console, events) carries an owner token or a
 * password: driven through contention, lock loss, the watchdog's cap, a node dying
 * while a lock is held, and the quorum going away.
 */
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redlock, type Lock } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';

const PASSWORD = 'logs-Secret-pw-3';

function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe('no secrets in errors or logs', () => {
  let cluster: RedisCluster;
  const said: string[] = [];
  const tokens: string[] = [];
  const spies: Array<{ mockRestore(): void }> = [];

  const record = (e: unknown): void => {
    said.push(e instanceof Error ? [e.message, e.stack ?? '', JSON.stringify(e), inspect(e.cause)].join('\n') : String(e));
  };
  const keep = (lock: Lock): Lock => {
    tokens.push(lock.value);
    return lock;
  };

  beforeAll(async () => {
    cluster = await RedisCluster.start(3, { args: ['--requirepass', PASSWORD] });
    for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      spies.push(jest.spyOn(console, level).mockImplementation((...args: unknown[]) => args.forEach(record)));
    }
  });

  afterAll(async () => {
    for (const s of spies) s.mockRestore();
    await cluster.stop();
  });

  it('keeps tokens and passwords out of everything it reports', async () => {
    const urls = cluster.servers.map((s) => `redis://:${PASSWORD}@127.0.0.1:${s.port}`);
    // Default onWarning (console.warn), so the warnings land in the console spy.
    const a = new Redlock(urls, { nodeTimeoutMs: 300 });
    const b = new Redlock(urls, { nodeTimeoutMs: 300 });
    for (const r of [a, b]) {
      for (const event of ['acquire', 'wait', 'acquired', 'extend', 'lost', 'release', 'failure'] as const) {
        r.on(event, (e) => said.push(JSON.stringify(e)));
      }
    }
    try {
      const held = keep(await a.acquire('contended', 10_000, { fencing: true }));
      await b.acquire('contended', 10_000, { retry: { retries: 2, delayMs: 10, jitterMs: 5 } }).catch(record);

      const short = keep(await a.acquire('expires', 100));
      record(await aborted(short.signal)); // LockLostError 'expired'
      await short.extend(1_000).catch(record);

      await a
        .using(
          'capped',
          300,
          async (lock) => {
            keep(lock);
            record(await aborted(lock.signal)); // max-hold-exceeded
          },
          { maxHoldMs: 150 },
        )
        .catch(record);

      await cluster.server(0).kill(); // a node dies while `held` is held
      await held.extend(10_000).catch(record);
      keep(await b.acquire('after-one-died', 5_000));
      await cluster.server(1).kill(); // the quorum is gone
      await b.acquire('no-quorum', 5_000).catch(record);
      await held.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }

    expect(tokens.length).toBe(4);
    expect(said.length).toBeGreaterThanOrEqual(6); // errors and warnings were produced
    for (const secret of [PASSWORD, ...tokens]) {
      expect(said.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});
