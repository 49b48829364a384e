/**
 * A Nest app that starts while a majority of its lock nodes restarted empty. It knows the
 * largest TTL in use from its module `ttl` and its decorators, so it keeps the restarted nodes
 * out of quorums while a survivor may still hold a lock another process took: no second holder.
 * A fresh deployment (every node young) is not held back. Real redis-servers, and a real
 * second process.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, HttpCode, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QuorumUnavailableError, Redlock, type Lock } from '@redlock-nest/core';
import {
  getRedlockServiceToken,
  LockRoute,
  RedlockModule,
  RedlockService,
  WithLock,
  WithSemaphore,
  type RedlockModuleOptions,
} from '@redlock-nest/nestjs';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import request from 'supertest';
import { runScript } from '../harness/child-script.js';
import { RedisCluster } from '../harness/redis-server.js';
import { reachable } from '../harness/test-utils.js';
import { RecordingLogger, rejection, unique, until } from './helpers.js';

const NEST_DIST = join(process.cwd(), 'packages/nestjs/dist/index.js');

@Controller('jobs')
class JobsController {
  @Post(':id/run')
  @HttpCode(200)
  @LockRoute('job:<id>')
  run(@Param('id') id: string) {
    return { id };
  }
}

/** Declares TTLs above the module's, on the default instance and on a named one. */
@Injectable()
class LongJobs {
  @WithLock('report', { ttl: 20_000 })
  async report(): Promise<void> {}

  @WithSemaphore('export', { permits: 2, ttl: 40_000 })
  async export(): Promise<void> {}

  @WithLock('ledger', { ttl: 50_000, redlock: 'ledger' })
  async ledger(): Promise<void> {}
}

@Controller('long')
class LongController {
  @Post(':id')
  @LockRoute('long:<id>', { ttl: 30_000 })
  run(@Param('id') id: string) {
    return { id };
  }
}

async function uptimeSeconds(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    return Number(/^uptime_in_seconds:(\d+)/m.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
}

describe('a Nest app that starts during a restart of its lock nodes', () => {
  let cluster: RedisCluster | undefined;
  const closing: Array<{ close(): Promise<void> }> = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    // A child left waiting by a failed expectation must not outlive the test.
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const c of closing.splice(0).reverse()) await c.close();
    await cluster?.stop();
    cluster = undefined;
  });

  /**
   * An app on `options`, listening unless `init: false`; `long`: with the LongJobs provider,
   * LongController and a named 'ledger' instance.
   */
  async function app(options: RedlockModuleOptions, extra: { long?: boolean; logger?: RecordingLogger; init?: boolean } = {}) {
    const builder = Test.createTestingModule({
      imports: [RedlockModule.forRoot(options), ...(extra.long ? [RedlockModule.forRoot({ ...options, name: 'ledger' })] : [])],
      controllers: extra.long ? [LongController] : [JobsController],
      providers: extra.long ? [LongJobs] : [],
    });
    if (extra.logger) builder.setLogger(extra.logger);
    const nest: INestApplication = (await builder.compile()).createNestApplication();
    closing.push(nest);
    if (extra.init === false) return { nest, base: '', locks: nest.get(RedlockService) };
    await nest.listen(0, '127.0.0.1');
    return { nest, base: await nest.getUrl(), locks: nest.get(RedlockService) };
  }

  it('A holds a lock while 2 of 3 nodes restart empty; B starts with the module defaults (a child process and an app in this one): no second holder', async () => {
    expect(existsSync(NEST_DIST)).toBe(true); // run `npm run build` first
    const ttl = 4_000;
    cluster = await RedisCluster.start(3);
    const urls = cluster.urls;
    // Process B, loaded and waiting: it starts its app on SIGUSR2, after the restart.
    const resource = `job:${unique('a')}`;
    const lines: string[] = [];
    const b = runScript(
      `
      import 'reflect-metadata';
      import { NestFactory } from '@nestjs/core';
      import { RedlockModule, RedlockService } from ${JSON.stringify(NEST_DIST)};
      const alive = setInterval(() => {}, 1_000);
      process.once('SIGUSR2', async () => {
        const app = await NestFactory.createApplicationContext(RedlockModule.forRoot({ nodes: ${JSON.stringify(urls)}, ttl: ${ttl} }), { logger: false });
        const locks = app.get(RedlockService);
        const resource = ${JSON.stringify(resource)};
        console.log(await locks.tryAcquire(resource, undefined, { fencing: true }).then((l) => (l ? 'acquired' : 'held'), (e) => e.name));
        const lock = await locks.acquire(resource, undefined, { fencing: true, timeoutMs: 20_000 });
        console.log('token ' + lock.fencingToken);
        await lock.release();
        await app.close();
        clearInterval(alive);
      });
      console.log('loaded');
    `,
      (line) => lines.push(line),
    );
    children.push(b.child);
    // The survivor, node 2, is older than the TTL when B first sees it.
    await until(async () => (await uptimeSeconds(urls[2]!)) >= ttl / 1_000 && lines.includes('loaded'), 'node 2 is up for the TTL', 20_000);

    // The app in this process is built now but connects at init, after the restart: its first sight.
    const here = await app({ nodes: urls, ttl }, { init: false });
    expect((here.locks.redlock as Redlock).nodes.map((n) => n.client.status)).toEqual(['wait', 'wait', 'wait']);
    const a = new Redlock(urls, { onWarning: () => undefined });
    closing.push(a);
    const first = await a.acquire(resource, ttl, { fencing: true });
    await Promise.all(
      [0, 1].map(async (i) => {
        await cluster!.server(i).kill();
        cluster!.server(i).wipe();
        await cluster!.server(i).restart();
      }),
    );
    b.child.kill('SIGUSR2');
    await here.nest.listen(0, '127.0.0.1');
    here.base = await here.nest.getUrl();
    const res = await request(here.base).post(`/jobs/${resource.slice('job:'.length)}/run`);
    expect(first.remainingMs).toBeGreaterThan(0);
    expect(res.status).toBe(503);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    await until(() => lines.length > 1, 'B reports its first attempt', 15_000);
    expect(first.remainingMs).toBeGreaterThan(0);
    expect(lines[1]).toBe('QuorumUnavailableError');

    // After the window both get the lock, with tokens above A's (counters raised from node 2).
    const { code } = await b.done;
    expect(code).toBe(0);
    expect(BigInt(lines[2]!.replace('token ', '')) > first.fencingToken!).toBe(true);
    const later: Lock = await here.locks.acquire(resource, undefined, { fencing: true, timeoutMs: 20_000 });
    expect(later.fencingToken! > first.fencingToken!).toBe(true);
    await later.release();
  }, 60_000);

  it('a fresh deployment (every node just started) locks at once with the module defaults', async () => {
    cluster = await RedisCluster.start(3);
    const { locks } = await app({ nodes: cluster.urls });
    const lock = await locks.acquire(unique('fresh'), undefined, { timeoutMs: 0 });
    expect(lock.acquireNodes.filter((o) => o.status === 'ok').length).toBeGreaterThanOrEqual(2);
    await lock.release();
  });

  it('the ttl of @WithLock, @WithSemaphore and @LockRoute raises the largest TTL in use of their own instance', async () => {
    cluster = await RedisCluster.start(1);
    const { nest, locks } = await app({ nodes: cluster.urls, ttl: 1_000 }, { long: true });
    const ledger = nest.get<RedlockService>(getRedlockServiceToken('ledger'));
    for (const service of [locks, ledger]) await (await service.acquire(unique('seen'))).release();
    await cluster.server(0).kill();
    cluster.server(0).wipe();
    await cluster.server(0).restart();
    for (const service of [locks, ledger]) await reachable(service.redlock as Redlock, 0);
    // The window a restart opens: the semaphore's 40 s on the default instance, the named one's 50 s there.
    const own = (await rejection(locks.acquire(unique('after'), undefined, { timeoutMs: 0 }))) as QuorumUnavailableError;
    expect(own).toBeInstanceOf(QuorumUnavailableError);
    expect(own.retryAfterMs).toBeGreaterThan(30_000);
    expect(own.retryAfterMs).toBeLessThanOrEqual(40_000);
    const named = (await rejection(ledger.acquire(unique('after'), undefined, { timeoutMs: 0 }))) as QuorumUnavailableError;
    expect(named.retryAfterMs).toBeGreaterThan(40_000);
  });

  it('keeps a configured restartRule.maxTtlMs as given, and logs a declared ttl above it with the fix', async () => {
    cluster = await RedisCluster.start(1);
    const logger = new RecordingLogger();
    await app({ nodes: cluster.urls, ttl: 1_000, restartRule: { maxTtlMs: 5_000 } }, { long: true, logger });
    await logger.logged('@LockRoute on LongController.run declares ttl 30000 ms');
    const line = logger.lines.find((l) => l.message.includes('@WithSemaphore on LongJobs.export'));
    expect(line?.level).toBe('warn');
    expect(line?.message).toMatch(/Raise restartRule\.maxTtlMs to at least 40000/);
  });
});
