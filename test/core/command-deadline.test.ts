/**
 * The backstop timeout of a lock node's commands on the clients the library creates: one
 * timer per node instead of ioredis' timer per command (command-deadline.ts). A command to a
 * paused server is still rejected as timed out once the backstop passes, and leaves the node's
 * in-flight window; the client keeps its own timeout for every other command.
 */
import { createHook } from 'node:async_hooks';
import { describe, expect, it } from '@jest/globals';
import { LockNode } from '../../packages/core/src/lock-node.js';
import { toClient } from '../../packages/core/src/redis-client.js';
import { rejection, useFixture } from './helpers.js';

/** A lock node over a client the library creates for `url` (nodeTimeoutMs 100: a 1 s backstop). */
function ownedNode(url: string): LockNode {
  return new LockNode(toClient(url, 0, 100, () => {}));
}

describe('the command deadline of a lock node', () => {
  const fx = useFixture(1);

  it('rejects a command the server never answers after the backstop, and frees its place in the window', async () => {
    const node = ownedNode(fx.urls[0]!);
    try {
      await node.connect();
      await node.call((c) => c.pttl('warm'));
      fx.cluster.servers[0]!.pause();
      const err = await rejection(node.call((c) => c.pttl('k')));
      expect((err as { code?: string }).code).toBe('ETIMEDOUT');
      expect(String((err as Error).message)).toMatch(/timed out/);
      // Nothing of ours waits there any more: the node is not charged for it.
      expect(node.unansweredSince()).toBeNaN();
      // The client's own commands keep its timeout (ioredis' own timer).
      expect(String((await rejection(node.client.info('server'))).message)).toMatch(/Command timed out/);
      expect(node.client.options?.commandTimeout).toBe(1_000);
    } finally {
      fx.cluster.servers[0]!.resume();
      await node.close();
    }
  }, 20_000);

  it('arms no timer per command: 200 commands in a row create at most a few', async () => {
    const node = ownedNode(fx.urls[0]!);
    try {
      await node.connect();
      await node.call((c) => c.pttl('warm'));
      let timers = 0;
      const hook = createHook({
        init(_id, type) {
          if (type === 'Timeout') timers++;
        },
      });
      hook.enable();
      for (let i = 0; i < 200; i++) await node.call((c) => c.pttl('k'));
      hook.disable();
      // ioredis' commandTimeout would arm one per command (200).
      expect(timers).toBeLessThan(5);
    } finally {
      await node.close();
    }
  });
});
