/**
 * RedlockModule's logging through Nest's Logger: quiet while locks behave, exactly one warning
 * per lost lock (never the token), nothing for locks a shutdown releases.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockLostError } from '@redlock-nest/core';
import { RedlockModule, RedlockService } from '@redlock-nest/nestjs';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { lockKey, RecordingLogger, rejection, unique } from '../nestjs/helpers.js';

describe('RedlockModule logging', () => {
  let server: RedisServer;
  let direct: Redis;
  let app: INestApplication;
  let locks: RedlockService;
  const logger = new RecordingLogger();
  const redlockLines = (): string[] => logger.lines.filter((l) => l.level !== 'log').map((l) => l.message);

  beforeAll(async () => {
    server = await RedisServer.start();
    direct = new Redis(server.url, { maxRetriesPerRequest: 1 });
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [server.url], independenceCheck: 'off' })],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
    locks = app.get(RedlockService);
  });
  afterAll(async () => {
    direct.disconnect();
    await server.stop();
  });

  it('logs nothing while locks are acquired, contended and released', async () => {
    const resource = unique('quiet');
    const lock = await locks.acquire(resource, 5_000);
    expect(await locks.tryAcquire(resource, 5_000)).toBeNull();
    await lock.release();
    await locks.using(resource, 5_000, () => 'ok');
    expect(redlockLines()).toEqual([]);
  });

  it('logs one warning per lost lock, naming resource and reason but not the token', async () => {
    const resource = unique('lost');
    const lock = await locks.acquire(resource, 5_000);
    await direct.del(lockKey(resource));
    expect(await rejection(lock.extend(5_000))).toBeInstanceOf(LockLostError);
    await rejection(lock.extend(5_000)); // already lost: no second line
    await lock.release();

    const lines = redlockLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(JSON.stringify([resource]));
    expect(lines[0]).toContain('not-owner');
    expect(lines[0]).not.toContain(lock.value);
  });

  it('does not report locks that the application shutdown releases', async () => {
    const before = redlockLines().length;
    const lock = await locks.acquire(unique('shutdown'), 5_000);
    await app.close();
    expect(lock.signal.aborted).toBe(true);
    expect(redlockLines()).toHaveLength(before);
  });
});
