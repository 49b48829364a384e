/**
 * The command backstop of a client this library creates (ClientHandle.backstopMs): one timer for
 * all of a node's commands instead of ioredis' timer per command. A node that leaves a command
 * unanswered for the whole backstop is reconnected and its commands fail as timeouts; a process
 * that stalls while the node answers does not fail them (replies read first). Real servers,
 * paused with SIGSTOP; the stall is this process blocked in spawnSync.
 */
import { spawnSync } from 'node:child_process';
import { connect, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { RedisServer } from '@redlock-nest/redis-process';
import { redisCliBin } from '../../../packages/redis-process/src/redis-cli.js';
import { rejection } from '../helpers.js';
import { LockNode } from '../../../packages/core/src/nodes/lock-node.js';
import { failFastOptions, type RedisClientLike } from '../../../packages/core/src/nodes/redis-client.js';

const BACKSTOP_MS = 400;

/** A node whose client has no command timeout of its own, as toClient makes them, with a short backstop. */
function backstoppedNode(server: RedisServer, warnings: string[]): LockNode {
  const { commandTimeout: _perCommand, ...options } = failFastOptions(100);
  const client = new Redis(server.url, options) as unknown as RedisClientLike;
  return new LockNode({ client, owned: true, label: `127.0.0.1:${server.port}`, backstopMs: BACKSTOP_MS }, (w) => warnings.push(w));
}

/** Blocks this process (no event loop turn) until the node has answered `ping` on another connection, `times` times. */
function stallWhileNodeAnswers(server: RedisServer, times: number): void {
  for (let i = 0; i < times; i++) {
    const cli = spawnSync(redisCliBin(), ['-h', '127.0.0.1', '-p', String(server.port), 'PING'], { encoding: 'utf8' });
    expect(cli.stdout.trim()).toBe('PONG');
  }
}

/**
 * Blocks this process for `stallMs` right after the `count`-th socket still connecting had its
 * timeout armed (ioredis arms its connect timeout so): the connects are under way in the kernel,
 * and the stall ends before this process read any of them. Returns the undo.
 */
function stallOnceConnectsAreArmed(count: number, stallMs: number): () => void {
  const original = Socket.prototype.setTimeout;
  let armed = 0;
  Socket.prototype.setTimeout = function (this: Socket, ...args: Parameters<Socket['setTimeout']>) {
    const result = original.apply(this, args);
    if (this.connecting && args[0] > 0 && ++armed === count) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, stallMs);
    return result;
  };
  return () => {
    Socket.prototype.setTimeout = original;
  };
}

describe('a node without a per-command timeout', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('sets no ioredis command timeout (no timer armed per command), and times the connect itself', async () => {
    const { toClient } = await import('../../../packages/core/src/nodes/redis-client.js');
    const handle = toClient(server.url, 0, 200, () => undefined);
    expect(handle.client.options?.commandTimeout).toBeUndefined();
    expect(handle.backstopMs).toBe(10_000);
    // The connect is timed by the node (judged after a poll phase); ioredis' own timer is a late backstop.
    expect([handle.connectLimitMs, handle.client.options?.connectTimeout]).toEqual([1_000, 10_000]);
    const withOwn = toClient({ host: '127.0.0.1', port: server.port, commandTimeout: 1_000 }, 0, 200, () => undefined);
    expect(withOwn.client.options?.commandTimeout).toBeUndefined();
    expect(withOwn.backstopMs).toBe(20_000);
    expect([withOwn.connectLimitMs, withOwn.client.options?.connectTimeout]).toEqual([2_000, 20_000]);
    for (const h of [handle, withOwn]) (h.client as unknown as Redis).disconnect();
  });

  it('fails the commands of a node silent past the backstop as timeouts, reconnects, and says so', async () => {
    const warnings: string[] = [];
    const node = backstoppedNode(server, warnings);
    try {
      expect(await node.call((c) => c.pttl('backstop:absent'))).toBe(-2);
      server.pause();
      const err = (await rejection(node.call((c) => c.pttl('backstop:absent')))) as Error & { code?: string };
      server.resume();
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toMatch(/^no answer from 127\.0\.0\.1:\d+ for \d+ ms; reconnecting$/);
      expect(err.code).toBe('ETIMEDOUT');
      const back = new Promise<void>((resolve) => node.onNextReady(resolve));
      await back;
      expect(await node.call((c) => c.pttl('backstop:absent'))).toBe(-2);
      expect(warnings[0]).toMatch(/is down \(no answer from .* ms; reconnecting\)/);
      expect(warnings[1]).toMatch(/is back up/);
    } finally {
      if (server.paused) server.resume();
      await node.close();
    }
  });

  it('does not fail a command whose reply sat unread while this process stalled past the backstop', async () => {
    const warnings: string[] = [];
    const node = backstoppedNode(server, warnings);
    try {
      expect(await node.call((c) => c.pttl('backstop:absent'))).toBe(-2);
      const sent = node.call((c) => c.pttl('backstop:unread'));
      // Every spawnSync blocks the event loop: the node answers meanwhile (a later connection's
      // PING is answered after ours), and the stall outlasts the backstop (each spawn takes ms).
      const start = performance.now();
      while (performance.now() - start < BACKSTOP_MS * 2) stallWhileNodeAnswers(server, 1);
      expect(await sent).toBe(-2);
      expect(warnings).toEqual([]);
    } finally {
      await node.close();
    }
  });

  it('fails a connection whose ready check gets no answer (a node paused before it was reached) at the backstop', async () => {
    // The TCP connect succeeds (the paused server's kernel accepts it); the ready check's INFO
    // gets no answer. Without a per-command timeout nothing else would end that handshake, and
    // commands waiting for the connection would never be charged to the node.
    const others = [await RedisServer.start(), await RedisServer.start()];
    const warnings: string[] = [];
    const redlock = new Redlock([server.url, ...others.map((o) => o.url)], { nodeTimeoutMs: 100, onWarning: (w) => warnings.push(w) });
    try {
      for (const o of others) o.pause();
      const err: unknown = await rejection(redlock.tryAcquire('backstop:handshake', 5_000));
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      const statuses = (err as QuorumUnavailableError).nodes.map((n) => n.status);
      expect(statuses.filter((s) => s !== 'ok')).toHaveLength(2);
      expect(warnings.join('\n')).toMatch(/no answer to the connection's ready check/);
      for (const o of others) o.resume();
      // Back: the next connect completes and the lock is granted.
      const lock = await redlock.acquire('backstop:handshake', 5_000, { timeoutMs: 10_000 });
      await lock.release();
    } finally {
      for (const o of others) if (o.paused) o.resume();
      await redlock.close();
      await Promise.all(others.map((o) => o.stop()));
    }
  });

  it('connects a cold process that stalled past the connect limit while its connects were under way', async () => {
    // nodeTimeoutMs 100: connects are timed out at 1 s. The stall (1.5 s) ends with every connect
    // completed in the kernel but unread; the timers phase then runs before the poll phase reads
    // them. ioredis' own connect timer failed all three nodes there; ours reads them first.
    const others = [await RedisServer.start(), await RedisServer.start()];
    const warnings: string[] = [];
    const redlock = new Redlock([server.url, ...others.map((o) => o.url)], { nodeTimeoutMs: 100, onWarning: (w) => warnings.push(w) });
    const undo = stallOnceConnectsAreArmed(3, 1_500);
    try {
      // Started in the check phase, so the loop's next phase after the stall is its timers phase.
      const acquired = await new Promise<Awaited<ReturnType<Redlock['tryAcquire']>>>((resolve, reject) =>
        setImmediate(() => void redlock.tryAcquire('backstop:cold-stall', 10_000).then(resolve, reject)),
      );
      undo();
      // Granted on a quorum (the third node may still be pending), and no node failed.
      const failed = acquired?.acquireNodes.filter((n) => n.status === 'error' || n.status === 'timeout');
      expect({ granted: acquired !== null, failed, warnings }).toEqual({ granted: true, failed: [], warnings: [] });
      await acquired?.release();
    } finally {
      undo();
      await redlock.close();
      await Promise.all(others.map((o) => o.stop()));
    }
  });

  it('still times out a connect that never completes, at the connect limit', async () => {
    // A paused server whose accept queue is full: its kernel drops our SYN, so the connect stays
    // under way until something times it out.
    const full = await RedisServer.start({ args: ['--tcp-backlog', '1'] });
    const fillers: Socket[] = [];
    const warnings: string[] = [];
    const redlock = new Redlock([server.url, full.url], { nodeTimeoutMs: 100, onWarning: (w) => warnings.push(w) });
    try {
      full.pause();
      for (let i = 0; i < 4; i++) fillers.push(connect({ host: '127.0.0.1', port: full.port }).on('error', () => undefined));
      const err: unknown = await rejection(redlock.tryAcquire('backstop:never-connects', 5_000));
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect(warnings.join('\n')).toMatch(/no connection to 127\.0\.0\.1:\d+ within 1000 ms/);
    } finally {
      for (const f of fillers) f.destroy();
      if (full.paused) full.resume();
      await redlock.close();
      await full.stop();
    }
  });

  it('bounds the wait for a connection that never gets ready on a client passed in (no guard of ours on it)', async () => {
    // A client passed in keeps its owner's options: here no command timeout, so its ready check
    // to a paused server waits for ever, and so would its connect(). Commands waiting for that
    // connection fail at the connect bound (at least 10 s) instead, and the acquisition ends.
    const others = [await RedisServer.start(), await RedisServer.start()];
    const passed = others.map(
      (o) => new Redis(o.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 300 }),
    );
    const redlock = new Redlock([server.url, ...passed], { nodeTimeoutMs: 100, onWarning: () => undefined });
    try {
      for (const o of others) o.pause();
      const err: unknown = await rejection(redlock.tryAcquire('backstop:passed-in', 5_000));
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      expect((err as QuorumUnavailableError).nodes.filter((n) => n.status !== 'ok')).toHaveLength(2);
    } finally {
      for (const o of others) if (o.paused) o.resume();
      await redlock.close();
      for (const c of passed) c.disconnect();
      await Promise.all(others.map((o) => o.stop()));
    }
  });
});
