/**
 * The engine seam: `RedlockModule.forRoot({ engine })` and a `forRootAsync` factory returning
 * `{ engine }` lock through the engine given (here a core Redlock built by the app), with the
 * decorators, `RedlockService` and `currentLock()` unchanged; the module closes the engine on
 * shutdown; and an engine without the optional capabilities (no node checks, no health probe)
 * still starts with the default `independenceCheck: 'fail'`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redlock, RedlockClosedError, type Lock, type LockEngine } from '@redlock-nest/core';
import { currentLock, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { directClient, lockKey, rejection, unique } from './helpers.js';

let server: RedisServer;
let direct: Redis;

@Injectable()
class Orders {
  @WithLock('order:<id>', { fencing: true })
  async pay(id: string): Promise<{ held: number; token: bigint | undefined }> {
    return { held: await direct.exists(lockKey(`order:${id}`)), token: currentLock()?.fencingToken };
  }
}

/** A LockEngine that delegates to a Redlock but has only the required members (no checks, no probe). */
function bareEngine(redlock: Redlock): LockEngine & { closed: boolean } {
  const engine = {
    closed: false,
    acquire: redlock.acquire.bind(redlock),
    tryAcquire: redlock.tryAcquire.bind(redlock),
    using: <T>(r: string | readonly string[], ttl: number, fn: (lock: Lock) => Promise<T> | T) => redlock.using(r, ttl, fn),
    on: redlock.on.bind(redlock),
    close: async () => {
      engine.closed = true;
      await redlock.close();
    },
  };
  return engine;
}

beforeAll(async () => {
  server = await RedisServer.start();
  direct = directClient(server.url);
});

afterAll(async () => {
  direct.disconnect();
  await server.stop();
});

describe('RedlockModule with an engine', () => {
  it('forRoot({ engine }): @WithLock locks through it, RedlockService exposes it, shutdown closes it', async () => {
    const engine = new Redlock([server.url]);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ engine, isGlobal: true })],
      providers: [Orders],
    }).compile();
    await moduleRef.init();
    const acquired: string[] = [];
    engine.on('acquired', (e) => acquired.push(e.resources.join(',')));
    const id = unique('engine');
    const paid = await moduleRef.get(Orders).pay(id);
    expect(paid.held).toBe(1);
    expect(typeof paid.token).toBe('bigint');
    expect(acquired).toEqual([`order:${id}`]);
    expect(moduleRef.get(RedlockService).redlock).toBe(engine);
    await moduleRef.close();
    expect(await rejection(engine.acquire('after-close', 1_000))).toBeInstanceOf(RedlockClosedError);
  });

  it('forRootAsync with a factory returning { engine }, and an engine without the optional checks', async () => {
    const engine = bareEngine(new Redlock([server.url]));
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ isGlobal: true, useFactory: () => ({ engine, ttl: 4_000 }) })],
      providers: [Orders],
    }).compile();
    // independenceCheck defaults to 'fail', and this engine has no checkIndependence: nothing to run.
    await moduleRef.init();
    const service = moduleRef.get(RedlockService);
    expect(service.options.ttl).toBe(4_000);
    expect(service.options.nodes).toEqual([]);
    const id = unique('engine-async');
    expect((await moduleRef.get(Orders).pay(id)).held).toBe(1);
    // The key is released after the call.
    expect(await direct.exists(lockKey(`order:${id}`))).toBe(0);
    await moduleRef.close();
    expect(engine.closed).toBe(true);
  });
});
