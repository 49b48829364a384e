/**
 * The fix an error names comes from whole Redis error codes (the reply's first word), never from a
 * substring: a CROSSSLOT reply contains "SSL" and was once reported as a failed TLS handshake.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { RedisServer } from '../../harness/redis-server.js';
import { rejection, uniqueResource, until } from '../helpers.js';

describe('error hints match whole Redis error codes', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    // One cluster-mode node serving every slot: multi-key scripts across slots answer CROSSSLOT.
    server = await RedisServer.start({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'] });
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    await until(async () => /cluster_state:ok/.test(String(await admin.call('CLUSTER', 'INFO'))), 'the one-node cluster serves all slots');
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });

  it('a CROSSSLOT reply is named as such, not as a failed TLS handshake', async () => {
    const redlock = new Redlock([server.url], { onWarning: () => undefined });
    try {
      const resource = uniqueResource('slots');
      // Two resources whose keys hash to different slots, locked together.
      const err = await rejection(redlock.acquire([`${resource}:a`, `${resource}:b`, `${resource}:c`], 5_000));
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect(err.nodes[0].error).toMatch(/^CROSSSLOT /);
      expect(err.message).not.toMatch(/TLS|certificate/);
      expect(err.message).toContain(`127.0.0.1:${server.port} is up but answered with the Redis error CROSSSLOT`);
    } finally {
      await redlock.close();
    }
  });
});
