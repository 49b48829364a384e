import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockLostError, RedlockArgumentError } from '@redlock-nest/core';
import {
  currentLock,
  RedlockModule,
  RedlockService,
  WithLock,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from '@redlock-nest/nestjs';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { RedisServer } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, rejection, unique } from './helpers.js';

const gate = deferred();
const entered = deferred<AbortSignal>();

@Injectable()
class Worker {
  @WithLock('job:<id>', { ttl: 3_000 })
  async run(id: string) {
    entered.resolve(currentLock()!.signal);
    await gate.promise;
    return id;
  }
}

describe('module lifecycle', () => {
  let redis: RedisServer;
  let direct: Redis;

  beforeAll(async () => {
    redis = await RedisServer.start();
    direct = directClient(redis.url);
  });

  afterAll(async () => {
    direct?.disconnect();
    await redis?.stop();
  });

  it('on app.close() releases held locks (aborting their signals) and leaves passed-in clients open', async () => {
    const mine = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500 });
    await new Promise((resolve) => mine.once('ready', resolve));
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: [mine], isGlobal: true, onWarning: () => {} })],
        providers: [Worker],
      }).compile();
      const app = await moduleRef.init();
      const id = unique('job');
      const call = app.get(Worker).run(id);
      const signal = await entered.promise;
      expect(await direct.exists(lockKey(`job:${id}`))).toBe(1);

      await app.close();
      expect(await direct.exists(lockKey(`job:${id}`))).toBe(0);
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(LockLostError);
      expect(await mine.ping()).toBe('PONG'); // ours: not closed by the module
      gate.resolve();
      expect(await rejection(call)).toBeInstanceOf(LockLostError); // its exclusivity ended at shutdown
    } finally {
      mine.disconnect();
    }
  });

  it('closes the connections it created, so the process exits on its own after app.close()', async () => {
    const dist = new URL('../../packages/nestjs/dist/index.js', import.meta.url);
    expect(existsSync(dist)).toBe(true); // run `npm run build` first (npm test does)
    const script = `
      import { Module } from '@nestjs/common';
      import { NestFactory } from '@nestjs/core';
      import { RedlockModule, RedlockService } from '@redlock-nest/nestjs';
      class AppModule {}
      Module({ imports: [RedlockModule.forRoot({ nodes: [process.env.LOCK_URL], ttl: 3000 })] })(AppModule);
      const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
      const locks = app.get(RedlockService);
      await locks.acquire('exit:plain');
      // A lock with a running watchdog, never finished by its routine.
      const inside = new Promise((resolve) => void locks.using('exit:watched', 3000, () => { resolve(); return new Promise(() => {}); }).catch(() => {}));
      await inside;
      await app.close();
      console.log('closed');
    `;
    const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      env: { ...process.env, NODE_OPTIONS: '', LOCK_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // The bound only turns a hang (the bug under test) into a failure instead of a stuck suite.
    const hang = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(hang);
    expect(out).toContain('closed');
    expect(code).toBe(0);
    expect(await direct.exists(lockKey('exit:plain'), lockKey('exit:watched'))).toBe(0);
  });

  it('forRootAsync({ useClass }) builds the options with createRedlockOptions()', async () => {
    @Injectable()
    class RedlockConfig implements RedlockOptionsFactory {
      createRedlockOptions(): RedlockModuleOptions {
        return { nodes: [redis.url], ttl: 1_234, lockedStatus: 423, independenceCheck: 'off' };
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useClass: RedlockConfig })],
    }).compile();
    const app = await moduleRef.init();
    const service = app.get(RedlockService);
    expect(service.options).toMatchObject({ ttl: 1_234, lockedStatus: 423, independenceCheck: 'off' });
    const lock = await service.acquire(unique('async'));
    expect(lock.remainingMs).toBeLessThanOrEqual(1_234);
    await app.close();
    expect(lock.released).toBe(true);
  });

  it('rejects invalid module options with a message that names the fix', async () => {
    const err = await rejection(Test.createTestingModule({ imports: [RedlockModule.forRoot({ nodes: [] })] }).compile());
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(err.message).toContain('nodes');
  });
});
