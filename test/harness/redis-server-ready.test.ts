/**
 * When a test's redis-server began answering, by its own log (RedisServer.readyAt): the chaos
 * checker ends a "majority down" window there, not when the harness got around to reading the
 * line, which a loaded machine delays (a lock granted in between looked granted without quorum).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { logLineTime, RedisServer } from './redis-server.js';

describe('redis-server readiness time', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('reads the time a log line was written from the line, in local time to the millisecond', () => {
    const line = '18519:M 04 Dec 2026 15:57:43.612 * Ready to accept connections tcp';
    expect(logLineTime(line)).toBe(new Date(2026, 11, 4, 15, 57, 43, 612).getTime());
    expect(logLineTime(`  ${line}\r`)).toBe(new Date(2026, 11, 4, 15, 57, 43, 612).getTime());
    expect(logLineTime('Ready to accept connections')).toBeUndefined();
  });

  it('knows when a server became ready, on start and again on restart, before its start resolved', async () => {
    const before = Date.now();
    const server = await RedisServer.start();
    servers.push(server);
    const started = Date.now();
    expect(server.readyAt).toBeGreaterThanOrEqual(before);
    expect(server.readyAt).toBeLessThanOrEqual(started);
    const first = server.readyAt!;
    await server.restart();
    expect(server.readyAt).toBeGreaterThan(first);
    expect(server.readyAt).toBeLessThanOrEqual(Date.now());
    const client = new Redis(server.url, { lazyConnect: true });
    await client.connect();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});
