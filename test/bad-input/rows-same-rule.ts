import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { RedlockArgumentError } from '@redlock-nest/core';
import { LockRoute, RedlockModule, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import type { BadInputContext } from './context.js';
import type { BadInputRow } from './row.js';

/**
 * One rule, one message, in every layer: each option the core, the NestJS decorators, the module
 * and the testing module share is refused by the same validator, so the message is the core's
 * word for word, with only the layer's context in front of the option's name.
 */

/** Matches `message` exactly (no other wording passes). */
function exactly(message: string): RegExp {
  return new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

/** A class with `@WithLock` and these options: the decorator validates when the class is defined. */
function withLockClass(options: Record<string, unknown>): unknown {
  class Broken {
    @WithLock('x', options)
    async run(): Promise<void> {}
  }
  return Broken;
}

function lockRouteClass(options: Record<string, unknown>): unknown {
  class Broken {
    @LockRoute('x', options)
    async run(): Promise<void> {}
  }
  return Broken;
}

/** Starts an app with `RedlockModule.forRoot({ nodes, ...options })` (rows expect it to fail). */
async function moduleWith(c: BadInputContext, options: Record<string, unknown>): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: c.urls, onWarning: (m: string) => c.logged.push(m), ...options })],
  }).compile();
  try {
    await moduleRef.init();
  } finally {
    await moduleRef.close();
  }
}

/** Compiles `RedlockTestingModule.forRoot(options)` (rows expect it to fail). */
async function testingModuleWith(options: Record<string, unknown>): Promise<void> {
  const moduleRef = await Test.createTestingModule({ imports: [RedlockTestingModule.forRoot(options)] }).compile();
  await moduleRef.close();
}

/** Runs `fn` on the testing module's in-memory Redlock. */
async function onTestingRedlock(fn: (redlock: RedlockTestingService['redlock']) => Promise<unknown>): Promise<unknown> {
  const moduleRef = await Test.createTestingModule({ imports: [RedlockTestingModule.forRoot()] }).compile();
  try {
    return await fn(moduleRef.get(RedlockTestingService).redlock);
  } finally {
    await moduleRef.close();
  }
}

type Case = readonly [where: string, run: (c: BadInputContext) => unknown, message: string];

const TTL_HUGE = '(lock time-to-live in ms) must be at most 2147483647, got 2147483648.';
const TTL_FRACTION = '(lock time-to-live in ms) must be a whole number, got 1.5.';

/** Per rule, the layers that apply it and the exact message each must give. */
const rules: ReadonlyArray<readonly [rule: string, cases: readonly Case[]]> = [
  [
    'ttl beyond a timer (2^31 ms)',
    [
      ['core acquire', (c) => c.redlock().acquire('r', 2 ** 31), `ttlMs ${TTL_HUGE}`],
      ['@WithLock', () => withLockClass({ ttl: 2 ** 31 }), `@WithLock on Broken.run: ttl ${TTL_HUGE}`],
      ['@LockRoute', () => lockRouteClass({ ttl: 2 ** 31 }), `@LockRoute on Broken.run: ttl ${TTL_HUGE}`],
      ['RedlockModule', (c) => moduleWith(c, { ttl: 2 ** 31 }), `RedlockModule options.ttl ${TTL_HUGE}`],
      ['RedlockTestingModule', () => testingModuleWith({ ttl: 2 ** 31 }), `RedlockTestingModule options.ttl ${TTL_HUGE}`],
      ['testing redlock acquire', () => onTestingRedlock((r) => r.acquire('r', 2 ** 31)), `ttlMs ${TTL_HUGE}`],
    ],
  ],
  [
    'fractional ttl',
    [
      ['core acquire', (c) => c.redlock().acquire('r', 1.5), `ttlMs ${TTL_FRACTION}`],
      ['@WithLock', () => withLockClass({ ttl: 1.5 }), `@WithLock on Broken.run: ttl ${TTL_FRACTION}`],
      ['RedlockTestingModule', () => testingModuleWith({ ttl: 1.5 }), `RedlockTestingModule options.ttl ${TTL_FRACTION}`],
      ['testing redlock acquire', () => onTestingRedlock((r) => r.acquire('r', 1.5)), `ttlMs ${TTL_FRACTION}`],
    ],
  ],
  [
    'negative wait / timeoutMs',
    [
      ['core acquire', (c) => c.redlock().acquire('r', 1_000, { timeoutMs: -1 }), 'acquire options.timeoutMs must be at least 0, got -1.'],
      [
        '@WithLock',
        () => withLockClass({ wait: -1 }),
        '@WithLock on Broken.run: wait (false or a deadline in ms) must be at least 0, got -1.',
      ],
      [
        'RedlockTestingModule',
        () => testingModuleWith({ defaultWaitMs: -1 }),
        'RedlockTestingModule options.defaultWaitMs must be at least 0, got -1.',
      ],
      [
        'testing redlock acquire',
        () => onTestingRedlock((r) => r.acquire('r', 1_000, { timeoutMs: -1 })),
        'acquire options.timeoutMs must be at least 0, got -1.',
      ],
    ],
  ],
  [
    'maxHoldMs 0',
    [
      ['core using', (c) => c.redlock().using('r', 1_000, () => 1, { maxHoldMs: 0 }), 'using options.maxHoldMs must be at least 1, got 0.'],
      ['@WithLock', () => withLockClass({ maxHoldMs: 0 }), '@WithLock on Broken.run: maxHoldMs must be at least 1, got 0.'],
      ['RedlockModule', (c) => moduleWith(c, { maxHoldMs: 0 }), 'RedlockModule options.maxHoldMs must be at least 1, got 0.'],
      [
        'testing redlock using',
        () => onTestingRedlock((r) => r.using('r', 1_000, () => 1, { maxHoldMs: 0 })),
        'using options.maxHoldMs must be at least 1, got 0.',
      ],
    ],
  ],
  [
    'fencing not a boolean',
    [
      [
        'core acquire',
        (c) => c.redlock().acquire('r', 1_000, { fencing: 'yes' as never }),
        'acquire options.fencing must be a boolean, got "yes".',
      ],
      ['@WithLock', () => withLockClass({ fencing: 'yes' }), '@WithLock on Broken.run: fencing must be a boolean, got "yes".'],
      [
        'testing redlock acquire',
        () => onTestingRedlock((r) => r.acquire('r', 1_000, { fencing: 'yes' as never })),
        'acquire options.fencing must be a boolean, got "yes".',
      ],
    ],
  ],
  [
    'negative retries',
    [
      ['core options', (c) => c.redlock(c.urls, { retry: { retries: -1 } }), 'retry.retries must be at least 0, got -1.'],
      [
        'RedlockModule',
        (c) => moduleWith(c, { retry: { retries: -1 } }),
        'RedlockModule options.retry.retries must be at least 0, got -1.',
      ],
      [
        'testing redlock acquire',
        () => onTestingRedlock((r) => r.acquire('r', 1_000, { retry: { retries: -1 } })),
        'acquire options.retry.retries must be at least 0, got -1.',
      ],
    ],
  ],
  [
    'keyPrefix not a string',
    [
      ['core options', (c) => c.redlock(c.urls, { keyPrefix: 5 as never }), 'keyPrefix must be a string, got 5.'],
      ['RedlockModule', (c) => moduleWith(c, { keyPrefix: 5 }), 'RedlockModule options.keyPrefix must be a string, got 5.'],
    ],
  ],
  [
    'lockedStatus not 409 or 423',
    [
      ['@LockRoute', () => lockRouteClass({ lockedStatus: 500 }), '@LockRoute on Broken.run: lockedStatus must be 409 or 423, got 500.'],
      ['RedlockModule', (c) => moduleWith(c, { lockedStatus: 500 }), 'RedlockModule options.lockedStatus must be 409 or 423, got 500.'],
      [
        'RedlockTestingModule',
        () => testingModuleWith({ lockedStatus: 500 }),
        'RedlockTestingModule options.lockedStatus must be 409 or 423, got 500.',
      ],
    ],
  ],
];

/** Rows: every layer of every shared rule, each asserting its exact message. */
export const sameRuleRows: readonly BadInputRow[] = rules.flatMap(([rule, cases]) =>
  cases.map(([where, run, message]): BadInputRow => ({
    layer: where.startsWith('core') ? 'core' : 'nestjs',
    name: `same rule, ${rule}: ${where}`,
    run,
    rejects: { error: RedlockArgumentError, fix: exactly(message) },
  })),
);
