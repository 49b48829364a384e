/**
 * The least privileges the library needs, found by running it under a restricted ACL
 * user and reading ACL LOG (acl.test.ts keeps this list honest: everything works with
 * it, and removing any entry breaks something or is logged as denied). docs/security.md
 * documents the same list.
 */

/**
 * Lock nodes: SET NX (and PTTL) of a single-key acquire, the lock scripts (GET/SET/PTTL/INCR/PEXPIRE/DEL/PUBLISH inside Lua),
 * the waiters' queue on a key's arbiter (ZADD/ZPOPMIN/ZCARD inside Lua), release notices, INFO for checks.
 */
export const LOCK_NODE_ACL = [
  '~redlock:*',
  '&redlock:*',
  '-@all',
  '+evalsha',
  '+eval',
  '+get',
  '+set',
  '+pttl',
  '+incr',
  '+pexpire',
  '+del',
  '+publish',
  '+zadd',
  '+zpopmin',
  '+zcard',
  '+zscore',
  '+zrem',
  '+subscribe',
  '+unsubscribe',
  '+info',
] as const;

/** The resource Redis of a RedisFencedStore (default key prefix `fenced:`). */
export const FENCED_STORE_ACL = ['~fenced:*', '-@all', '+evalsha', '+eval', '+hget', '+hset', '+hmget'] as const;

/** Creates (or resets) `user` with `password` and `rules` on the server behind `client`. */
export async function setUser(
  client: { call(...args: string[]): Promise<unknown> },
  user: string,
  password: string,
  rules: readonly string[],
): Promise<void> {
  await client.call('ACL', 'SETUSER', user, 'reset', 'on', `>${password}`, ...rules);
}

/** The ACL LOG entries of a server (only `user`'s when given), as "reason object (context)". */
export async function aclDenials(client: { call(...args: string[]): Promise<unknown> }, user?: string): Promise<string[]> {
  // ACL LOG shows the last 10 entries unless asked for more.
  const log = (await client.call('ACL', 'LOG', '1024')) as unknown[][];
  return log.flatMap((entry) => {
    const e: Record<string, unknown> = {};
    for (let i = 0; i < entry.length; i += 2) e[String(entry[i])] = entry[i + 1];
    return user === undefined || e.username === user ? [`${String(e.reason)} ${String(e.object)} (${String(e.context)})`] : [];
  });
}
