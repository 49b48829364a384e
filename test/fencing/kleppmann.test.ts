/**
 * The scenario of Martin Kleppmann's "How to do distributed locking" (a process pause, then
 * fencing tokens), end to end: holder A
 * acquires, is frozen longer than its TTL, B acquires and writes with its token, A wakes
 * and writes believing it still holds the lock. The fenced store rejects A's write and
 * keeps B's data.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redlock, RedisFencedStore } from '@redlock-nest/core';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisCluster, RedisServer } from '../harness/redis-server.js';

const here = dirname(fileURLToPath(import.meta.url));
type Msg = { type: string; token?: string; outcome?: string; error?: string; currentToken?: string };

function next(child: ChildProcess, type: string): Promise<Msg> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: Msg): void => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m);
    };
    const onExit = (code: number | null): void => reject(new Error(`holder exited (${code}) before "${type}"`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

describe('the Kleppmann scenario: a frozen holder wakes up after its lock expired', () => {
  let lockNodes: RedisCluster;
  let storeServer: RedisServer;
  let storeClient: Redis;
  let store: RedisFencedStore;
  let b: Redlock;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    lockNodes = await RedisCluster.start(3);
    storeServer = await RedisServer.start(); // the protected resource: not a lock node
    storeClient = new Redis(storeServer.url);
    store = new RedisFencedStore(storeClient);
    b = new Redlock(lockNodes.urls, { onWarning: () => undefined });
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await b.close();
    storeClient.disconnect();
    await Promise.all([lockNodes.stop(), storeServer.stop()]);
  });

  function startHolder(resource: string): ChildProcess {
    const child = fork(join(here, 'fixtures', 'paused-holder.mjs'), {
      env: { ...process.env, LOCK_URLS: JSON.stringify(lockNodes.urls), STORE_URL: storeServer.url, RESOURCE: resource, TTL_MS: '1000' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(child);
    return child;
  }

  /** B waits out A's lease (acquire retries until A's key expired), then writes with its token. */
  async function bTakesOver(resource: string, tokenA: bigint): Promise<bigint> {
    const lock = await b.acquire(resource, 10_000, { fencing: true, timeoutMs: 20_000 });
    const tokenB = lock.fencingToken!;
    expect(tokenB > tokenA).toBe(true);
    await store.write(resource, 'written-by-B', tokenB);
    await lock.release();
    return tokenB;
  }

  it('rejects the write of a holder frozen with SIGSTOP past its TTL', async () => {
    const resource = 'account:frozen';
    const holder = startHolder(resource);
    const tokenA = BigInt((await next(holder, 'acquired')).token!);
    holder.kill('SIGSTOP');
    let tokenB: bigint;
    try {
      tokenB = await bTakesOver(resource, tokenA);
    } finally {
      holder.kill('SIGCONT');
    }
    holder.send({ type: 'write' });
    const result = await next(holder, 'result');
    expect(result).toMatchObject({ outcome: 'rejected', error: 'StaleFencingTokenError', currentToken: String(tokenB) });
    expect(await store.read(resource)).toEqual({ value: 'written-by-B', token: tokenB });
  });

  it('rejects the write of a holder whose event loop stalled past its TTL', async () => {
    const resource = 'account:stalled';
    const dir = mkdtempSync(join(tmpdir(), 'redlock-nest-stall-'));
    const flag = join(dir, 'go');
    try {
      const holder = startHolder(resource);
      const tokenA = BigInt((await next(holder, 'acquired')).token!);
      const resultPromise = next(holder, 'result');
      holder.send({ type: 'stall', until: flag }); // A spins, unaware of time passing
      const tokenB = await bTakesOver(resource, tokenA);
      writeFileSync(flag, ''); // A's "pause" ends
      const result = await resultPromise;
      expect(result).toMatchObject({ outcome: 'rejected', error: 'StaleFencingTokenError', currentToken: String(tokenB) });
      expect(await store.read(resource)).toEqual({ value: 'written-by-B', token: tokenB });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
