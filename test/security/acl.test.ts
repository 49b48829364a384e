/**
 * The library under a restricted ACL user: the documented list of commands, key and
 * channel patterns is enough, and every entry of it is needed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { RedisCluster } from '../harness/redis-server.js';
import { aclDenials, LOCK_NODE_ACL, setUser } from './acl-rules.js';
import { lockWorkflow } from './workflow.js';

const USER = 'locker';
const PASSWORD = 'acl-Locker-pw-7';

describe('ACL: least privileges', () => {
  let cluster: RedisCluster;
  let admins: Redis[];
  let urls: string[];

  const configure = async (rules: readonly string[]): Promise<void> => {
    for (const a of admins) {
      await setUser(a, USER, PASSWORD, rules);
      await a.call('ACL', 'LOG', 'RESET');
    }
  };
  const denials = async (): Promise<string[]> => (await Promise.all(admins.map((a) => aclDenials(a)))).flat();

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    admins = cluster.urls.map((url) => new Redis(url));
    // Room for the denials of every user of the side-by-side test (the default keeps the last 128).
    for (const a of admins) await a.config('SET', 'acllog-max-len', '1024');
    urls = cluster.servers.map((s) => `redis://${USER}:${PASSWORD}@127.0.0.1:${s.port}`);
  });

  afterAll(async () => {
    for (const a of admins) a.disconnect();
    await cluster.stop();
  });

  it('works with exactly the documented rules, with nothing denied', async () => {
    await configure(LOCK_NODE_ACL);
    expect(await lockWorkflow(urls)).toEqual([]);
    expect(await denials()).toEqual([]);
  });

  it('needs every documented command: without any one of them something is denied', async () => {
    // One user per command left out, each running the workflow on its own resources, side by side.
    const commands = LOCK_NODE_ACL.filter((r) => r.startsWith('+'));
    const unneeded = await Promise.all(
      commands.map(async (command, i) => {
        const user = `${USER}-without-${i}`;
        for (const a of admins)
          await setUser(
            a,
            user,
            PASSWORD,
            LOCK_NODE_ACL.filter((r) => r !== command),
          );
        const userUrls = cluster.servers.map((s) => `redis://${user}:${PASSWORD}@127.0.0.1:${s.port}`);
        // UNSUBSCRIBE is only sent once a sweep finds a channel idle past its linger (~1 s here; sweeps run every linger).
        await lockWorkflow(userUrls, [], command === '+unsubscribe' ? 2_500 : 0, user);
        const denied = (await Promise.all(admins.map((a) => aclDenials(a, user)))).flat();
        return denied.some((d) => d.includes(command.slice(1))) ? [] : [command];
      }),
    );
    expect(unneeded.flat()).toEqual([]);
  }, 60_000);

  it('refuses keys outside ~redlock:* with an error that names the ACL fix', async () => {
    await configure(LOCK_NODE_ACL);
    const other = new Redlock(urls, { keyPrefix: 'other:', nodeTimeoutMs: 300, onWarning: () => undefined });
    try {
      const err = await other.acquire('x', 1_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect((err as Error).message).toMatch(/NOPERM.*grant the ACL user the commands, keys and channels/);
    } finally {
      await other.close();
    }
    expect((await denials()).some((d) => d.startsWith('key'))).toBe(true);
  });

  it('with a command missing, the error names the ACL fix', async () => {
    await configure(LOCK_NODE_ACL.filter((r) => r !== '+set'));
    const r = new Redlock(urls, { nodeTimeoutMs: 300, onWarning: () => undefined });
    try {
      await expect(r.acquire('x', 1_000)).rejects.toThrow(/NOPERM.*docs\/security\.md/);
    } finally {
      await r.close();
    }
  });
});
