import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockArgumentError } from '@redlock-nest/core';
import { LockKeyError, RedlockDashboardModule, RedlockModule, RedlockModuleNotInitializedError, WithLock } from '@redlock-nest/nestjs';
import type { BadInputContext } from './context.js';
import type { BadInputRow } from './row.js';

@Injectable()
class Orders {
  @WithLock('order:<id>')
  async pay(id: unknown): Promise<unknown> {
    return id;
  }

  @WithLock(() => '')
  async empty(): Promise<void> {}
}

/** Calls `fn` with an initialised RedlockModule providing `Orders`, and closes the app after. */
async function withApp(ctx: BadInputContext, fn: (orders: Orders) => Promise<unknown>): Promise<unknown> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: ctx.urls, isGlobal: true, onWarning: (m: string) => ctx.logged.push(m) })],
    providers: [Orders],
  }).compile();
  await moduleRef.init();
  try {
    return await fn(moduleRef.get(Orders));
  } finally {
    await moduleRef.close();
  }
}

/** Compiles and initialises a module with these RedlockModule options (rows expect it to fail). */
async function initWith(options: Record<string, unknown>): Promise<void> {
  const moduleRef = await Test.createTestingModule({ imports: [RedlockModule.forRoot(options)] }).compile();
  try {
    await moduleRef.init();
  } finally {
    await moduleRef.close();
  }
}

/** Rows of the NestJS layer (`@redlock-nest/nestjs`). The first runs before any module exists. */
export const nestjsRows: readonly BadInputRow[] = [
  {
    layer: 'nestjs',
    name: '@WithLock method called with no RedlockModule initialised',
    run: () => new Orders().pay('1'),
    rejects: { error: RedlockModuleNotInitializedError, fix: /Import RedlockModule\.forRoot.*not run/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock template naming a missing parameter',
    run: () => {
      class Broken {
        @WithLock('order:<orderId>')
        async pay(id: string): Promise<string> {
          return id;
        }
      }
      return Broken;
    },
    rejects: { error: LockKeyError, fix: /"orderId"/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock template with an invalid placeholder',
    run: () => {
      class Broken {
        @WithLock('order:<a b>')
        async pay(id: string): Promise<string> {
          return id;
        }
      }
      return Broken;
    },
    rejects: { error: LockKeyError, fix: /invalid placeholder.*Use <name>/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock with permits (a JavaScript caller): a semaphore is @WithSemaphore',
    run: () => {
      const options = { permits: 2 } as Record<string, unknown>;
      class Broken {
        @WithLock('export:<id>', options)
        async run(id: string): Promise<string> {
          return id;
        }
      }
      return Broken;
    },
    rejects: { error: RedlockArgumentError, fix: /use @WithSemaphore\(key, \{ permits: 2 \}\)/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock template resolving to undefined',
    run: (c) => withApp(c, (orders) => orders.pay(undefined)),
    rejects: { error: LockKeyError, fix: /<id>/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock template resolving to an object',
    run: (c) => withApp(c, (orders) => orders.pay({ id: 7 })),
    rejects: { error: LockKeyError, fix: /<id>/ },
  },
  {
    layer: 'nestjs',
    name: '@WithLock key function returning ""',
    run: (c) => withApp(c, (orders) => orders.empty()),
    rejects: { error: LockKeyError, fix: /key/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockModule.forRoot with no nodes',
    run: () => initWith({ nodes: [] }),
    rejects: { error: RedlockArgumentError, fix: /at least one Redis node/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockModule.forRoot with a bad URL',
    run: () => initWith({ nodes: ['localhost:6379'] }),
    rejects: { error: RedlockArgumentError, fix: /redis:\/\// },
  },
  {
    layer: 'nestjs',
    name: 'RedlockModule.forRoot with an engine that is not one',
    run: () => initWith({ engine: { acquire: 1 } }),
    rejects: { error: RedlockArgumentError, fix: /options\.engine must be a lock engine/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockModule.forRoot with both nodes and an engine',
    run: (c) => initWith({ nodes: c.urls, engine: inertEngine() }),
    rejects: { error: RedlockArgumentError, fix: /either nodes \(Redis\) or engine/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockModule.forRoot with an engine and Redlock options it would ignore',
    run: () => initWith({ engine: inertEngine(), keyPrefix: 'x:', retry: false }),
    rejects: { error: RedlockArgumentError, fix: /keyPrefix, retry .*engine's own options to its constructor/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockDashboardModule.forRoot with neither a guard nor public: true',
    run: async () => RedlockDashboardModule.forRoot({ path: '/locks' }),
    rejects: { error: RedlockArgumentError, fix: /\{ guard: AdminGuard \}.*\{ public: true \}/ },
  },
  {
    layer: 'nestjs',
    name: 'RedlockDashboardModule.forRoot with a route pattern as path',
    run: async () => RedlockDashboardModule.forRoot({ path: '/locks/:id', public: true }),
    rejects: { error: RedlockArgumentError, fix: /plain URL path like '\/locks'/ },
  },
];

/** An object shaped like a lock engine that never locks (the rows above never reach it). */
function inertEngine(): Record<string, unknown> {
  const never = (): Promise<never> => Promise.reject(new Error('not used'));
  return { acquire: never, tryAcquire: never, using: never, close: () => Promise.resolve(), on: () => () => undefined };
}
