/**
 * RedlockModule's startup check of the nodes (`independenceCheck`): replicas fail startup by default,
 * the same server listed twice fails it in every mode, and ACL setups that cannot run INFO are told
 * about the opt-out ('off') instead of being silently unchecked.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { NodeIndependenceError, Redlock, RedlockArgumentError } from '@redlock-nest/core';
import { RedlockModule, RedlockService, type RedlockModuleOptions } from '@redlock-nest/nestjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { LOCK_NODE_ACL, setUser } from '../security/acl-rules.js';
import { rejection } from './helpers.js';

class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

describe('RedlockModule independenceCheck', () => {
  const socketDir = mkdtempSync(join(tmpdir(), 'redlock-sock-'));
  const socketPath = join(socketDir, 'redis.sock');
  let primary: RedisServer;
  let other: RedisServer;
  let replica: RedisServer;
  /** Reachable over TCP and over `socketPath`: one run_id under two addresses. */
  let twoAddresses: RedisServer;

  beforeAll(async () => {
    [primary, other] = await Promise.all([RedisServer.start(), RedisServer.start()]);
    replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    twoAddresses = await RedisServer.start({ args: ['--unixsocket', socketPath, '--unixsocketperm', '700'] });
  });
  afterAll(async () => {
    await Promise.all([primary, other, replica, twoAddresses].map((s) => s.stop()));
    rmSync(socketDir, { recursive: true, force: true });
  });

  /** Compiles and initialises a module with `options`; resolves to the init error, or closes the app. */
  async function start(options: RedlockModuleOptions, logger = new CapturingLogger()): Promise<unknown> {
    const moduleRef = await Test.createTestingModule({ imports: [RedlockModule.forRoot(options)] })
      .setLogger(logger)
      .compile();
    try {
      await moduleRef.init();
      expect((moduleRef.get(RedlockService).redlock as Redlock).quorum).toBeGreaterThan(0);
      return undefined;
    } catch (err) {
      return err;
    } finally {
      await moduleRef.close();
    }
  }

  it("defaults to 'fail': a replica among the nodes makes app.init() reject", async () => {
    const err = await start({ nodes: [primary.url, replica.url, other.url] });
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect((err as Error).message).toContain(`nodes[1] (127.0.0.1:${replica.port}) is a replica`);
  });

  it('refuses the same server listed twice by address in every mode, when the module is created', async () => {
    for (const independenceCheck of ['fail', 'warn', 'off'] as const) {
      const err = await rejection(
        Test.createTestingModule({
          imports: [RedlockModule.forRoot({ nodes: [primary.url, `redis://localhost:${primary.port}`, other.url], independenceCheck })],
        }).compile(),
      );
      expect(err).toBeInstanceOf(RedlockArgumentError);
      expect(err.message).toMatch(/nodes\[0\] \(127\.0\.0\.1:\d+\) and nodes\[1\] \(localhost:\d+\) are the same Redis server/);
    }
  });

  it("'warn' logs a replica and starts, but the same server under two addresses (same run_id) still rejects", async () => {
    const logger = new CapturingLogger();
    expect(await start({ nodes: [primary.url, replica.url, other.url], independenceCheck: 'warn' }, logger)).toBeUndefined();
    expect(logger.warnings.join('\n')).toMatch(/is a replica \(role:slave\)/);

    const err = await start({ nodes: [twoAddresses.url, other.url, { path: socketPath }], independenceCheck: 'warn' });
    expect(err).toBeInstanceOf(NodeIndependenceError);
    expect((err as NodeIndependenceError).sameServer).toBe(true);
    expect((err as Error).message).toContain(`nodes[0] (127.0.0.1:${twoAddresses.port}) and nodes[2] (${socketPath}) are the same server`);
  });

  it("an ACL user that may not run INFO fails startup by default, naming the opt-out; 'off' starts", async () => {
    const admin = new Redis(primary.url, { maxRetriesPerRequest: 1 });
    try {
      await setUser(
        admin,
        'no-info',
        'pw-no-info',
        LOCK_NODE_ACL.filter((rule) => rule !== '+info'),
      );
      const url = `redis://no-info:pw-no-info@127.0.0.1:${primary.port}`;
      const err = await start({ nodes: [url] });
      expect(err).toBeInstanceOf(RedlockArgumentError);
      expect((err as Error).message).toMatch(/may not run INFO \(NOPERM\).*Grant the user '\+info', or set independenceCheck: 'off'/);
      expect((err as Error).message).not.toContain('pw-no-info');
      expect(await start({ nodes: [url], independenceCheck: 'off' })).toBeUndefined();
    } finally {
      await admin.call('ACL', 'DELUSER', 'no-info');
      admin.disconnect();
    }
  });

  it('a node that is down at startup is logged, not fatal (availability, not configuration)', async () => {
    const gone = await RedisServer.start();
    const url = gone.url;
    await gone.stop();
    const logger = new CapturingLogger();
    expect(await start({ nodes: [primary.url, url, other.url] }, logger)).toBeUndefined();
    expect(logger.warnings.join('\n')).toMatch(/could not reach/);
  });
});
