import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock, RedlockArgumentError, RedlockClosedError, RedlockError } from '@redlock-nest/core';
import { rejection } from '../helpers.js';

/**
 * Every bad input gives a typed error whose message names the offending value and the
 * fix. Validation happens before any network I/O, so these Redlocks point at a port
 * nothing listens on and never connect.
 */
const NOWHERE = 'redis://127.0.0.1:1';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rows read error fields the assertions then check
function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

function expectArgumentError(err: unknown, fix: RegExp): void {
  expect(err).toBeInstanceOf(RedlockArgumentError);
  expect(err).toBeInstanceOf(RedlockError);
  expect((err as Error).name).toBe('RedlockArgumentError');
  expect((err as Error).message).toMatch(fix);
}

describe('bad input', () => {
  const made: Redlock[] = [];
  const redlock = (options?: object): Redlock => {
    const r = new Redlock([NOWHERE], { onWarning: () => {}, ...options });
    made.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(made.map((r) => r.close()));
  });

  const nodes: Array<[string, unknown, RegExp]> = [
    ['no nodes', [], /at least one Redis node.*new Redlock\(\["redis:\/\/host:6379"/],
    ['a URL instead of a list', NOWHERE, /at least one Redis node/],
    ['a malformed URL', ['not a url'], /nodes\[0\] is not a valid URL\. Use redis:\/\//],
    ['a non-redis protocol', [NOWHERE, 'http://127.0.0.1:6379'], /nodes\[1\] has protocol "http:"; use redis:\/\/ or rediss:\/\//],
    ['a number', [42], /nodes\[0\] must be a redis:\/\/ URL, ioredis options, an ioredis client or a node-redis client, got number/],
    ['null', [null], /got null/],
  ];
  it.each(nodes)('rejects %s as nodes', (_what, input, fix) => {
    expectArgumentError(
      thrown(() => new Redlock(input as string[])),
      fix,
    );
  });

  const options: Array<[string, unknown, RegExp]> = [
    ['options that are not an object', 'fast', /Redlock options must be an object, got "fast"/],
    ['a numeric keyPrefix', { keyPrefix: 5 }, /keyPrefix must be a string, got 5/],
    ['a driftFactor above 0.5', { driftFactor: 0.9 }, /driftFactor must be at most 0\.5, got 0\.9/],
    ['a negative driftConstantMs', { driftConstantMs: -1 }, /driftConstantMs must be at least 0/],
    ['nodeTimeoutMs 0', { nodeTimeoutMs: 0 }, /nodeTimeoutMs must be at least 1/],
    ['a string retry', { retry: 'yes' }, /retry \(an object or false\) must be an object/],
    ['negative retries', { retry: { retries: -1 } }, /retry\.retries must be at least 0/],
    ['fractional retries', { retry: { retries: 1.5 } }, /retry\.retries must be a whole number/],
    ['a NaN delay', { retry: { delayMs: Number.NaN } }, /retry\.delayMs must be a number, got NaN/],
    ['maxHoldMs 0', { maxHoldMs: 0 }, /maxHoldMs must be at least 1/],
    ['a string checkIndependence', { checkIndependence: 'yes' }, /checkIndependence must be a boolean/],
    ['a string onWarning', { onWarning: 'log' }, /onWarning must be a function/],
  ];
  it.each(options)('rejects %s', (_what, input, fix) => {
    expectArgumentError(
      thrown(() => new Redlock([NOWHERE], input as object)),
      fix,
    );
  });

  const ttls: Array<[string, unknown, RegExp]> = [
    ['0', 0, /ttlMs \(lock time-to-live in ms\) must be at least 1, got 0/],
    ['a negative ttl', -1, /ttlMs.*at least 1/],
    ['NaN', Number.NaN, /ttlMs.*must be a number, got NaN/],
    ['a fractional ttl', 1.5, /ttlMs.*whole number/],
    ['a string ttl', '1000', /ttlMs.*must be a number, got "1000"/],
    ['Infinity', Infinity, /ttlMs.*must be finite/],
    ['a ttl beyond a timer (2^31 ms)', 2 ** 31, /ttlMs.*at most 2147483647/],
    ['a ttl within the drift allowance', 2, /ttlMs \(2\) must be longer than the clock-drift allowance.*Use a longer ttl/],
  ];
  it.each(ttls)('rejects %s as ttl', async (_what, ttl, fix) => {
    expectArgumentError(await rejection(redlock().acquire('r', ttl as number)), fix);
  });

  const resources: Array<[string, unknown, RegExp]> = [
    ['an empty string', '', /non-empty string/],
    ['an empty list', [], /at least one resource/],
    ['a number', 42, /must be a string.*got 42\. Convert ids with String\(id\)/],
    ['a number inside a list', ['a', 7], /must be a string/],
    ['null', null, /got null/],
    ['a name longer than 4096', 'x'.repeat(4097), /4097 characters long; the limit is 4096\. Hash long identifiers first/],
  ];
  it.each(resources)('rejects %s as resource', async (_what, resource, fix) => {
    expectArgumentError(await rejection(redlock().acquire(resource as string, 1_000)), fix);
  });

  const callOptions: Array<[string, unknown, RegExp]> = [
    ['options that are not an object', 'x', /acquire options must be an object/],
    ['a signal that is not an AbortSignal', { signal: {} }, /acquire options\.signal must be an AbortSignal/],
    ['a negative timeoutMs', { timeoutMs: -1 }, /timeoutMs must be at least 0/],
    ['a string fencing', { fencing: 'yes' }, /fencing must be a boolean/],
    ['a string retries', { retry: { retries: 'many' } }, /options\.retry\.retries must be a number/],
  ];
  it.each(callOptions)('rejects %s in acquire', async (_what, input, fix) => {
    expectArgumentError(await rejection(redlock().acquire('r', 1_000, input as object)), fix);
  });

  it('rejects a using() without a routine, and bad using options', async () => {
    expectArgumentError(
      await rejection(redlock().using('r', 1_000, 'not a function' as never)),
      /using\(resource, ttlMs, routine, options\?\) needs a function/,
    );
    expectArgumentError(await rejection(redlock().using('r', 1_000, () => 1, { maxHoldMs: 0 })), /using options\.maxHoldMs/);
  });

  it('fails every operation of a closed instance with RedlockClosedError; closing twice is fine', async () => {
    const closed = redlock();
    const first = closed.close();
    await first;
    await closed.close();
    const fix = /closed\. Create a new Redlock/;
    for (const op of [
      () => closed.acquire('r', 1_000),
      () => closed.tryAcquire('r', 1_000),
      () => closed.using('r', 1_000, () => 1),
      () => closed.connect(),
      () => closed.checkIndependence(),
    ]) {
      const err = await rejection(op());
      expect(err).toBeInstanceOf(RedlockClosedError);
      expect(err.message).toMatch(fix);
    }
  });

  it('validates before checking that the instance is open (the argument is the first thing to fix)', async () => {
    const closed = redlock();
    await closed.close();
    expectArgumentError(await rejection(closed.acquire('r', 0)), /ttlMs/);
  });
});
