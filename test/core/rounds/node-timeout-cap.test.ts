/**
 * The node timeout of a lock round: `nodeTimeoutMs`, capped at ttl/3 per attempt, counted
 * from the command's write, or from the node's last reply while replies to earlier commands
 * keep arriving (README, "Options"). Two of three nodes sit behind a real TCP proxy: one that
 * holds their traffic (silent nodes on live links), or one that delays it (slow links).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, QuorumUnavailableError } from '@redlock-nest/core';
import { DelayProxy } from '../../harness/delay-proxy.js';
import { rejection, uniqueResource, useFixture } from '../helpers.js';

const TTL = 600;
/** ttl/3: below the default nodeTimeoutMs (500), so the cap applies. */
const CAP = 200;
/** The default drift allowance for TTL: 1% of it plus 2 ms. */
const DRIFT = Math.floor(TTL * 0.01) + 2;

describe('the node timeout cap (ttl/3 per attempt)', () => {
  const fx = useFixture(3);
  let proxies: DelayProxy[] = [];

  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });

  const slowNodes = async (delayMs: number): Promise<string[]> => {
    proxies = await Promise.all([1, 2].map((i) => DelayProxy.start(fx.cluster.server(i).port, delayMs)));
    return [fx.urls[0]!, ...proxies.map((p) => p.url)];
  };

  it('counts a silent node as timed out after ttl/3 when that is below nodeTimeoutMs', async () => {
    const redlock = fx.redlock({}, await slowNodes(0));
    await redlock.connect();
    // The links stay up; the nodes just say nothing until the attempt has given up on them.
    for (const proxy of proxies) proxy.hold();
    const err = await rejection(redlock.acquire(uniqueResource('silent'), TTL, { retry: false }));
    for (const proxy of proxies) proxy.release();
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    const nodes = (err as QuorumUnavailableError).nodes;
    expect(nodes[0]!.status).toBe('ok');
    for (const slow of nodes.slice(1)) expect(slow).toMatchObject({ status: 'timeout', error: `no answer within ${CAP} ms` });
  });

  it('times a node out after a quarter of the cap in a later round while it still leaves an earlier command unanswered', async () => {
    // Redis answers a connection in order: the second attempt's command waits behind the first's,
    // unanswered for longer than the cap, so the node has been silent that long already and the
    // attempt does not wait a second whole cap for it (a paused node cost every contended attempt
    // the whole node timeout); a quarter of it is left for a node resumed just before.
    const redlock = fx.redlock({}, await slowNodes(0));
    await redlock.connect();
    for (const proxy of proxies) proxy.hold();
    const first = await rejection(redlock.acquire(uniqueResource('silent-1'), TTL, { retry: false }));
    const second = await rejection(redlock.acquire(uniqueResource('silent-2'), TTL, { retry: false }));
    for (const proxy of proxies) proxy.release();
    const slow = (err: unknown): unknown => (err as QuorumUnavailableError).nodes.slice(1);
    expect(slow(first)).toEqual([1, 2].map(() => expect.objectContaining({ status: 'timeout', error: `no answer within ${CAP} ms` })));
    const behind = new RegExp(`^no answer within ${CAP} ms \\(silent for \\d+ ms: an earlier command is still unanswered\\)$`);
    expect(slow(second)).toEqual([1, 2].map(() => expect.objectContaining({ status: 'timeout', error: expect.stringMatching(behind) })));
  });

  it('grants over slow links only with honest validity: counted from the first write, never from the answer', async () => {
    // 150 ms each way: no slow node can answer within 300 ms of a write, more than the cap. A node
    // whose replies to earlier commands (a failed attempt's, its release's) are still arriving is
    // answering, so a retry may wait for it past the cap; what it must not do is report that
    // wait as validity. The default retry, as in the report that found it.
    const redlock = fx.redlock({}, await slowNodes(150));
    const resource = uniqueResource('slow-links');
    for (let i = 0; i < 5; i++) {
      const outcome = await redlock.acquire(resource, TTL).then(
        (lock) => ({ lock, remainingMs: lock.remainingMs, returnedAt: performance.now(), err: undefined }),
        (err: unknown) => ({ lock: undefined, remainingMs: 0, returnedAt: 0, err }),
      );
      if (!outcome.lock) {
        expect(outcome.err instanceof LockNotAcquiredError || outcome.err instanceof QuorumUnavailableError).toBe(true);
        continue;
      }
      // A grant needs a slow node's "ok", which came at least 300 ms after its write (the proxy's
      // timers never fire early): the winning attempt's first write was at least that long before
      // the return, and its validity ends ttl − drift after that write, never after the answer.
      // (Not "after the acquire() call": the first write comes a moment later, at the end of the
      // tick, and no key can be set before it, so counting from the write is honest too.)
      expect(outcome.lock.validUntilMono).toBeLessThanOrEqual(outcome.returnedAt - 300 + TTL - DRIFT);
      expect(outcome.remainingMs).toBeLessThanOrEqual(TTL - DRIFT - 300);
      await outcome.lock.release();
    }
  });
});
