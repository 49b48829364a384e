/**
 * Redis AUTH (requirepass) on every lock node: the library authenticates from the URL
 * or from ioredis options, a wrong or missing password is a typed error that names the
 * fix, and the password never appears in an error or a warning.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';
import { lockWorkflow } from './workflow.js';

const PASSWORD = 'auth-Req-pw-91';

describe('Redis AUTH', () => {
  let cluster: RedisCluster;

  beforeAll(async () => {
    cluster = await RedisCluster.start(3, { args: ['--requirepass', PASSWORD] });
  });

  afterAll(async () => {
    await cluster.stop();
  });

  const url = (port: number, password?: string): string =>
    password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}`;

  it('works with the password in the URL', async () => {
    const warnings: string[] = [];
    expect(
      await lockWorkflow(
        cluster.servers.map((s) => url(s.port, PASSWORD)),
        warnings,
      ),
    ).toEqual([]);
    expect(warnings.filter((w) => w.includes(PASSWORD))).toEqual([]);
  });

  it('works with the password in ioredis options', async () => {
    expect(await lockWorkflow(cluster.servers.map((s) => ({ host: '127.0.0.1', port: s.port, password: PASSWORD })))).toEqual([]);
  });

  it.each([
    ['a wrong password', 'not-the-pw', /refused the credentials \(WRONGPASS\): check the username and password/],
    ['no password', undefined, /refused the credentials \(NOAUTH\): check the username and password/],
  ])('with %s: QuorumUnavailableError naming the fix, without the password', async (_name, password, fix) => {
    const warnings: string[] = [];
    const redlock = new Redlock(
      cluster.servers.map((s) => url(s.port, password)),
      { nodeTimeoutMs: 300, onWarning: (m) => warnings.push(m) },
    );
    try {
      const err = await redlock.acquire('r', 1_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect((err as Error).message).toMatch(fix);
      const text = [(err as Error).message, (err as Error).stack, JSON.stringify(err), ...warnings].join('\n');
      expect(text).not.toContain(PASSWORD);
      if (password) expect(text).not.toContain(password);
    } finally {
      await redlock.close();
    }
  });
});
