/**
 * RedlockHealthIndicator with `checks: true`: the findings of `checkNodes()` in the health
 * details (an eviction policy with maxmemory makes it degraded), never the password.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedlockModule } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, RedlockHealthModule } from '@redlock-nest/nestjs/health';
import { RedisServer } from '../harness/redis-server.js';

describe('RedlockHealthIndicator with checks', () => {
  const password = 'hunter2-secret';
  let server: RedisServer;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--requirepass', password, '--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru'] });
    moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ nodes: [`redis://:${password}@127.0.0.1:${server.port}`], isGlobal: true, independenceCheck: 'off' }),
        RedlockHealthModule,
      ],
    }).compile();
    await moduleRef.init();
  });
  afterAll(async () => {
    await moduleRef.close();
    await server.stop();
  });

  it('reports the eviction error with its fix and is degraded; without checks it stays up', async () => {
    const indicator = moduleRef.get(RedlockHealthIndicator);
    const checked = await indicator.isHealthy('redlock', { checks: true });
    expect(checked.redlock.status).toBe('degraded');
    const findings = checked.redlock.findings as Array<{ check: string; level: string; fix?: string }>;
    expect(findings).toContainEqual(
      expect.objectContaining({ check: 'eviction', level: 'error', fix: expect.stringMatching(/noeviction/) }),
    );
    expect(findings.every((f) => f.level !== 'ok')).toBe(true);
    expect(JSON.stringify(checked)).not.toContain(password);
    const plain = await indicator.isHealthy('redlock');
    expect(plain.redlock.status).toBe('up');
    expect(plain.redlock.findings).toBeUndefined();
  });
});
