/**
 * `@redlock-nest/core/testing`: an in-memory Redis for tests. A `Redlock` over a few
 * {@link InMemoryRedisServer}s runs the real algorithm (quorum, validity, retries, release
 * notices, watchdog, fencing) without a Redis server, and each server can be stopped, slowed or
 * restarted to rehearse the faults a lock must survive. Kept out of the root entry so that an
 * application's production imports never name a test double.
 *
 * @example
 * ```ts
 * import { Redlock } from '@redlock-nest/core';
 * import { InMemoryRedisServer } from '@redlock-nest/core/testing';
 *
 * const servers = [new InMemoryRedisServer(), new InMemoryRedisServer(), new InMemoryRedisServer()];
 * const redlock = new Redlock(servers.map((s) => s.client()));
 * ```
 *
 * @packageDocumentation
 */
export { InMemoryRedisClient } from './in-memory-client.js';
export { InMemoryRedisServer, type InMemoryRedisServerOptions } from './in-memory-node.js';
