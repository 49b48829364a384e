/**
 * LockNotAcquiredError's hint names the option of the API in use: `wait` for `@WithLock` (and the
 * Nest lock service's locked calls), `timeoutMs` / `retry` for the core, and says how long it tried.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockNotAcquiredError } from '@redlock-nest/core';
import { RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { RedisServer } from '../harness/redis-server.js';
import { rejection, unique } from './helpers.js';

@Injectable()
class Reports {
  @WithLock('report:<id>', { wait: false })
  async now(id: string): Promise<string> {
    return id;
  }

  @WithLock('report:<id>', { wait: 400 })
  async soon(id: string): Promise<string> {
    return id;
  }
}

describe('LockNotAcquiredError hints', () => {
  let server: RedisServer;
  let app: INestApplication;
  let locks: RedlockService;
  let reports: Reports;

  beforeAll(async () => {
    server = await RedisServer.start();
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [server.url] })],
      providers: [Reports],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    locks = app.get(RedlockService);
    reports = app.get(Reports);
  });
  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  it('@WithLock with wait: false names the wait option, not timeoutMs', async () => {
    const id = unique('busy');
    const held = await locks.acquire(`report:${id}`, 10_000);
    try {
      const err = await rejection(reports.now(id));
      expect(err).toBeInstanceOf(LockNotAcquiredError);
      expect(err.waitOption).toBe('wait');
      expect(err.message).toMatch(
        /\(1 attempt\(s\); nodes: .*\)\. It waited \d+ ms\. To wait longer, raise the wait option \(in ms, e\.g\. \{ wait: 5_000 \}\), or treat it as "busy"\.$/,
      );
      expect(err.message).not.toMatch(/timeoutMs|retry/);
    } finally {
      await held.release();
    }
  });

  it('@WithLock with a wait says how long it waited and to raise wait', async () => {
    const id = unique('busy-wait');
    const held = await locks.acquire(`report:${id}`, 10_000);
    try {
      const err = await rejection(reports.soon(id));
      expect(err).toBeInstanceOf(LockNotAcquiredError);
      expect(typeof err.waitedMs).toBe('number');
      expect(err.attempts).toBeGreaterThan(1);
      expect(err.message).toContain(`It waited ${Math.round(err.waitedMs)} ms. To wait longer, raise the wait option`);
    } finally {
      await held.release();
    }
  });

  it("the service's core-style acquire keeps the core's hint (timeoutMs / retry)", async () => {
    const id = unique('busy-core');
    const held = await locks.acquire(`report:${id}`, 10_000);
    try {
      const err = await rejection(locks.acquire(`report:${id}`, 10_000, { retry: false }));
      expect(err.waitOption).toBe('timeoutMs');
      expect(err.message).toMatch(
        /It waited \d+ ms\. To wait longer, pass a larger timeoutMs \(e\.g\. \{ timeoutMs: 5_000 \}\) or retry: \{ retries \} in the acquire options/,
      );
    } finally {
      await held.release();
    }
  });
});
