/**
 * Read locks, semaphores and fair locks in RedlockTestingModule: `@WithLock(key, { mode })`,
 * `@WithSemaphore(key, { permits })` and `@WithLock(key, { fair: true })` run the core's
 * primitives over the module's in-memory nodes, with the semantics they have on Redis (no
 * redis-server is started in this file). One node is down in each test: the quorum is the
 * two nodes left.
 */
import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockNotAcquiredError, primitiveOf } from '@redlock-nest/core';
import { currentLock, WithLock, WithSemaphore } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import { Gate, rejection, unique, until } from '../nestjs/helpers.js';

@Injectable()
class Reports {
  readonly gate = new Gate();
  readonly order: string[] = [];

  @WithLock('config:<id>', { mode: 'read', wait: 5_000 })
  async read(id: string): Promise<string | undefined> {
    await this.gate.pass();
    return primitiveOf(currentLock()!);
  }

  @WithLock('config:<id>', { mode: 'write', wait: false })
  async write(id: string): Promise<string | undefined> {
    return primitiveOf(currentLock()!);
  }

  @WithSemaphore('export:<tenant>', { permits: 2, wait: false })
  async export(tenant: string): Promise<string | undefined> {
    await this.gate.pass();
    return primitiveOf(currentLock()!);
  }

  @WithLock('job:<id>', { fair: true, wait: 10_000 })
  async job(id: string, who: string): Promise<void> {
    this.order.push(who);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('RedlockTestingModule primitives (read-write, semaphore, fair) over in-memory nodes', () => {
  let moduleRef: TestingModule;
  let locks: RedlockTestingService;
  let reports: Reports;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      providers: [Reports],
    }).compile();
    await moduleRef.init();
    locks = moduleRef.get(RedlockTestingService);
    reports = moduleRef.get(Reports);
  });
  afterEach(async () => {
    reports.gate.release();
    await moduleRef.close();
  });

  it("lets @WithLock({ mode: 'read' }) callers in together and keeps a writer out meanwhile", async () => {
    locks.nodes[0]!.stop();
    const id = unique('cfg');
    const readers = [reports.read(id), reports.read(id)];
    await until(() => reports.gate.inside === 2, 'both readers are inside');
    expect(await rejection(reports.write(id))).toBeInstanceOf(LockNotAcquiredError);
    reports.gate.release();
    expect(await Promise.all(readers)).toEqual(['read', 'read']);
    expect(await reports.write(id)).toBe('write');
  });

  it('lets @WithSemaphore run `permits` calls at once and refuses the next', async () => {
    locks.nodes[1]!.stop();
    const tenant = unique('tenant');
    const running = [reports.export(tenant), reports.export(tenant)];
    await until(() => reports.gate.inside === 2, 'two exports run');
    expect(await rejection(reports.export(tenant))).toBeInstanceOf(LockNotAcquiredError);
    reports.gate.release();
    expect(await Promise.all(running)).toEqual(['semaphore', 'semaphore']);
    // The permits are free again.
    const again = reports.export(tenant);
    await until(() => reports.gate.inside === 1, 'the next export runs');
    reports.gate.release();
    expect(await again).toBe('semaphore');
  });

  it('runs @WithLock({ fair: true }) callers in order of arrival', async () => {
    locks.nodes[2]!.stop();
    const id = unique('job');
    const queue = `redlock:fair-queue:job:${id}`;
    const held = await locks.redlock.acquire(`job:${id}`, 10_000, { fair: true });
    const calls: Array<Promise<void>> = [];
    for (const [i, who] of ['a', 'b', 'c'].entries()) {
      calls.push(reports.job(id, who));
      await until(() => locks.nodes.slice(0, 2).every((s) => s.members(queue).length === i + 1), `${who} queued`);
    }
    await held.release();
    await Promise.all(calls);
    expect(reports.order).toEqual(['a', 'b', 'c']);
  });
});
