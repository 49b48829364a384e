/**
 * How the node-redis cluster adapter turns node-redis' unbounded waits, and the connection drops
 * of a slot re-map, into timeouts (code ETIMEDOUT): the failure the engine reads as "outcome
 * unknown, retry". Apart from the adapter (node-redis-cluster-client.ts) so it reads as routing
 * only; its connect and every command go through these.
 */

/**
 * `sent`, or a rejection with code ETIMEDOUT after `ms` (the engine then counts the node as timed
 * out, and an acquire there as maybe held). node-redis has no command timeout, and a cluster
 * command first waits for its master's connection, unbounded: without this, the commands of a
 * paused master would stay in flight, filling the node's window, for as long as the pause lasts.
 */
export function withDeadline<T>(sent: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error(`${what} timed out after ${ms} ms`), { code: 'ETIMEDOUT' })), ms);
    sent.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/**
 * node-redis fails a master's commands under way with "Disconnects client" when it drops that
 * master's connection: it re-maps the slots after a failover, and the master it knew is now a
 * replica (or gone). Nothing says the command was not applied, and the next attempt reaches the
 * new master: a timeout (outcome unknown, retried within `timeoutMs`), not a node that is down.
 */
export function remapped(err: unknown): Error | undefined {
  if (!(err instanceof Error) || (err.constructor.name !== 'DisconnectsClientError' && err.message !== 'Disconnects client'))
    return undefined;
  return Object.assign(
    new Error(
      `the cluster dropped its connection to a master while re-mapping its slots (${err.message}); the command's outcome is unknown`,
    ),
    { code: 'ETIMEDOUT', cause: err },
  );
}
