/**
 * The module's startup node check (`nodeCheck`): against a redis-server with an eviction
 * policy and maxmemory, 'fail' makes app.init() reject with NodeCheckError, 'warn' logs the
 * finding with its fix and starts.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { RedlockArgumentError } from '@redlock-nest/core';
import { NodeCheckError } from '@redlock-nest/core/operator';
import { RedlockModule } from '@redlock-nest/nestjs';
import { RedisServer } from '../harness/redis-server.js';
import { rejection } from '../harness/test-utils.js';
import { RecordingLogger } from './helpers.js';

describe('RedlockModule nodeCheck', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru'] });
  });
  afterAll(async () => {
    await server.stop();
  });

  it("'fail' rejects app.init() with NodeCheckError naming the finding and its fix", async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [server.url], independenceCheck: 'off', nodeCheck: 'fail' })],
    }).compile();
    const err = await rejection(moduleRef.init());
    expect(err).toBeInstanceOf(NodeCheckError);
    expect(err.message).toMatch(/eviction: maxmemory-policy allkeys-lru/);
    expect(err.message).toMatch(/noeviction/);
    await moduleRef.close();
  });

  it("'warn' logs the error finding (and the persistence warning) and starts", async () => {
    const logger = new RecordingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [server.url], independenceCheck: 'off', nodeCheck: 'warn' })],
    })
      .setLogger(logger)
      .compile();
    const app = await moduleRef.init();
    expect(logger.lines).toContainEqual({
      level: 'error',
      message: expect.stringMatching(/Node check: .* eviction: .*fix: CONFIG SET maxmemory-policy noeviction/),
    });
    expect(logger.lines).toContainEqual({ level: 'warn', message: expect.stringMatching(/persistence: no persistence/) });
    await app.close();
  });

  it('rejects a bad mode with a typed error', async () => {
    const err = await rejection(
      Test.createTestingModule({ imports: [RedlockModule.forRoot({ nodes: [server.url], nodeCheck: 'sometimes' as 'off' })] }).compile(),
    );
    expect(err).toBeInstanceOf(RedlockArgumentError);
    expect(err.message).toMatch(/nodeCheck must be 'off', 'warn' or 'fail'/);
  });
});
