import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisFencedStore, RedlockArgumentError, StaleFencingTokenError } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';

describe('RedisFencedStore (the resource-side check)', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisFencedStore;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis(server.url);
    store = new RedisFencedStore(client);
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('accepts increasing and equal tokens and rejects a lower one with the token it has seen', async () => {
    await store.write('k1', 'a', 5n);
    await store.write('k1', 'b', 5n); // same holder writing again
    await store.write('k1', 'c', 7n);
    const stale = store.write('k1', 'stale', 6n);
    await expect(stale).rejects.toBeInstanceOf(StaleFencingTokenError);
    await expect(stale).rejects.toMatchObject({ resource: 'k1', token: 6n, currentToken: 7n });
    expect(await store.read('k1')).toEqual({ value: 'c', token: 7n });
  });

  it('readForUpdate records the token, so an older holder that read earlier cannot write afterwards', async () => {
    await store.write('k2', '10', 1n);
    expect(await store.readForUpdate('k2', 2n)).toBe('10'); // older holder A reads
    expect(await store.readForUpdate('k2', 3n)).toBe('10'); // newer holder B reads
    await expect(store.write('k2', '11', 2n)).rejects.toBeInstanceOf(StaleFencingTokenError); // A's write: stale
    await store.write('k2', '11', 3n);
    expect(await store.read('k2')).toEqual({ value: '11', token: 3n });
  });

  it('compares tokens above 2^53 exactly', async () => {
    const big = 2n ** 64n + 1n;
    await store.write('k3', 'x', big);
    await expect(store.write('k3', 'y', big - 1n)).rejects.toBeInstanceOf(StaleFencingTokenError);
    await store.write('k3', 'z', big + 1n);
    expect(await store.read('k3')).toEqual({ value: 'z', token: big + 1n });
    // A shorter decimal is smaller even where it is lexically larger ('9' > '18446744073709551618').
    await expect(store.write('k3', 'w', 9n)).rejects.toBeInstanceOf(StaleFencingTokenError);
  });

  it('reads nothing for a key never written, and refuses a token that is not a bigint', async () => {
    expect(await store.read('never')).toBeUndefined();
    await expect(store.write('k4', 'v', 5 as unknown as bigint)).rejects.toBeInstanceOf(RedlockArgumentError);
    expect(() => new RedisFencedStore({} as never)).toThrow(RedlockArgumentError);
  });
});
