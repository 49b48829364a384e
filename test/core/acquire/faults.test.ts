import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, QuorumUnavailableError, type NodeOutcome } from '@redlock-nest/core';
import { CLIENT_KINDS, useFixture, lockKey, rejection, uniqueResource, until } from '../helpers.js';

/** Node faults against 5 servers; each test gets fresh servers since it kills or pauses some. */
describe.each(CLIENT_KINDS)('node faults (5 %s nodes)', (client) => {
  const fx = useFixture(5, { each: true, client });

  const statuses = (nodes: readonly NodeOutcome[]): string[] => nodes.map((n) => n.status);

  it('acquires, extends and releases with 2 of 5 nodes killed (a minority)', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300, onWarning: () => {} });
    await redlock.connect();
    await fx.cluster.server(3).kill();
    await fx.cluster.server(4).kill();
    const resource = uniqueResource('minority');

    const lock = await redlock.acquire(resource, 10_000);
    expect(await fx.values(resource, [0, 1, 2])).toEqual([lock.value, lock.value, lock.value]);

    const before = lock.expiration;
    const same = await lock.extend(30_000);
    expect(same).toBe(lock);
    expect(lock.expiration).toBeGreaterThan(before);
    for (const i of [0, 1, 2]) expect(await fx.node(i).pttl(lockKey(resource))).toBeGreaterThan(10_000);

    const result = await lock.release();
    expect(
      statuses(result.nodes)
        .slice(3)
        .every((s) => s === 'error' || s === 'pending'),
    ).toBe(true);
    expect(result.released).toBe(result.nodes.filter((n) => n.status === 'ok').length);
    await until(async () => (await fx.values(resource, [0, 1, 2])).every((v) => v === null), 'the release reached the live nodes');
    // Free again for someone else.
    const other = fx.redlock();
    expect(await other.tryAcquire(resource, 10_000)).not.toBeNull();
  });

  it('fails fast with QuorumUnavailableError when 3 of 5 nodes are killed (a majority), without retrying', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300, retry: { retries: 20, delayMs: 50, jitterMs: 0 } });
    await redlock.connect();
    for (const i of [0, 1, 2]) await fx.cluster.server(i).kill();
    const resource = uniqueResource('majority');

    const err = await rejection(redlock.acquire(resource, 10_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(1);
    expect(err.quorum).toBe(3);
    expect(err.resources).toEqual([resource]);
    expect(statuses(err.nodes).slice(0, 3)).toEqual(['error', 'error', 'error']);
    expect(err.nodes.map((n: NodeOutcome) => n.node)).toEqual(fx.urls.map((u) => u.replace('redis://', '')));
    expect(err.message).toContain('Check that a majority of the configured nodes are up');
    expect(err.message).not.toContain(err.nodes[3].error ?? 'no-such-text');
    // Whatever the live nodes granted was handed back.
    await until(async () => (await fx.values(resource, [3, 4])).every((v) => v === null), 'partial holds were released');
    expect(redlock.activeLocks).toBe(0);
  });

  it('also fails fast when the majority was never reachable (connection refused on first use)', async () => {
    for (const i of [0, 1, 2]) await fx.cluster.server(i).kill();
    const redlock = fx.redlock({ nodeTimeoutMs: 300 });
    const err = await rejection(redlock.acquire(uniqueResource('refused'), 10_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(1);
    expect(statuses(err.nodes).slice(0, 3)).toEqual(['error', 'error', 'error']);
  });

  it('acquires with one node paused (SIGSTOP) and removes the SET that lands after SIGCONT', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300 });
    await redlock.connect();
    const resource = uniqueResource('paused');
    fx.cluster.server(4).pause();

    const lock = await redlock.acquire(resource, 30_000);
    await fx.settled(resource, lock.value, [0, 1, 2, 3]);

    // The paused node's SET lands on SIGCONT: our key appears there late...
    fx.cluster.server(4).resume();
    await until(async () => (await fx.values(resource, [4]))[0] === lock.value, 'the late SET landed on the resumed node');
    // ...and the release removes it too (a 30 s TTL: only the release can have removed it).
    await lock.release();
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'the release removed every copy');
  });

  it('reports the paused node as pending/timeout, and cleans it up after SIGCONT', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 300 });
    const rival = fx.redlock({ nodeTimeoutMs: 300 });
    await Promise.all([redlock.connect(), rival.connect()]);
    const resource = uniqueResource('paused-release');
    const callsBefore = await fx.lockCommands(4);
    fx.cluster.server(4).pause();

    const lock = await redlock.acquire(resource, 30_000);
    // A rival sees the holders, and the paused node still owing an answer.
    const busy = await rejection(rival.acquire(resource, 30_000, { retry: false }));
    expect(busy).toBeInstanceOf(LockNotAcquiredError);
    expect(busy.attempts).toBe(1);
    // The round stops once a majority said 'held'; the paused node cannot have answered.
    expect(statuses(busy.nodes).filter((s) => s === 'held').length).toBeGreaterThanOrEqual(3);
    expect(['pending', 'timeout']).toContain(busy.nodes[4].status);

    const result = await lock.release();
    expect(['pending', 'timeout']).toContain(result.nodes[4]!.status);
    await until(async () => (await fx.values(resource, [0, 1, 2, 3])).every((v) => v === null), 'released on the live nodes');

    fx.cluster.server(4).resume();
    // Four commands run on the resumed node: our SET and release, the rival's SET and release.
    // Whatever order the two connections are served in, each SET is followed by its release.
    await until(async () => (await fx.lockCommands(4)) >= callsBefore + 4, 'the queued commands ran');
    expect((await fx.values(resource, [4]))[0]).toBeNull();
  });

  it('treats timed-out nodes as maybe held: 3 of 5 paused gives QuorumUnavailableError and nothing left after SIGCONT', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 200 });
    await redlock.connect();
    const resource = uniqueResource('paused-majority');
    const callsBefore = await Promise.all([0, 1, 2].map((i) => fx.lockCommands(i)));
    for (const i of [0, 1, 2]) fx.cluster.server(i).pause();

    // retry: false: a timeout may be a busy machine, so it is otherwise retried (next test).
    const err = await rejection(redlock.acquire(resource, 30_000, { retry: false }));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(1);
    expect(statuses(err.nodes).slice(0, 3)).toEqual(['timeout', 'timeout', 'timeout']);

    for (const i of [0, 1, 2]) fx.cluster.server(i).resume();
    // The timed-out SETs land, then the releases sent after them: no copy of our key survives.
    for (const i of [0, 1, 2]) {
      await until(async () => (await fx.lockCommands(i)) >= callsBefore[i]! + 2, `node ${i} ran the SET and the release`);
    }
    await until(async () => (await fx.values(resource)).every((v) => v === null), 'no copy of the key is left');
  });

  it('retries timed-out nodes while the retries last (a timeout may be a busy machine), then gives QuorumUnavailableError', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 100 });
    await redlock.connect();
    for (const i of [0, 1, 2]) fx.cluster.server(i).pause();
    const err = await rejection(
      redlock.acquire(uniqueResource('paused-retried'), 30_000, { retry: { retries: 2, delayMs: 10, jitterMs: 0 } }),
    );
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.attempts).toBe(3);
    expect(statuses(err.nodes).slice(0, 3)).toEqual(['timeout', 'timeout', 'timeout']);
  });

  it('gets the lock when a paused majority resumes within the wait budget', async () => {
    const redlock = fx.redlock({ nodeTimeoutMs: 100 });
    await redlock.connect();
    const resource = uniqueResource('paused-resumed');
    const callsBefore = await fx.lockCommands(0);
    for (const i of [0, 1, 2]) fx.cluster.server(i).pause();
    const acquiring = redlock.acquire(resource, 30_000, { timeoutMs: 30_000 });
    // Resume once the first attempt's SET reached (was written to) a paused node.
    await until(async () => (await fx.lockCommands(3)) > 0, 'the first attempt ran');
    for (const i of [0, 1, 2]) fx.cluster.server(i).resume();
    const lock = await acquiring;
    expect(await fx.lockCommands(0)).toBeGreaterThan(callsBefore);
    await lock.release();
  });
});
