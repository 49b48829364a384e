/**
 * A waiter's queue read and its watch are two connections, so the watch can deliver the deletion
 * of the key the read names before the read's answer arrives (the chaos run on etcd found a
 * waiter stalled until its deadline that way, and the queue behind it). Staged deterministically
 * with a proxy in front of one member for the waiter's engine: the proxy holds the waiter's queue
 * read, releases the holder, lets the watch's DELETE through, and only then answers the read.
 * The waiter must still be granted.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EtcdLocks } from '@redlock-nest/etcd';
import { EtcdCluster, keysUnder, uniqueResource, until } from './helpers.js';

/** Hooks run once, each on the next answer of its kind, before that answer is passed on. */
interface Staging {
  afterRead?: () => Promise<void>;
  afterEnqueue?: () => Promise<void>;
  /** Holds the watch stream back until a deletion arrives, then passes all of it on in one write. */
  holdWatch?: boolean;
}

/** A proxy that passes watch streams through as they flow and can hold back the answer of a queue read. */
async function stagingProxy(target: string, staging: Staging, onWatchData: (chunk: string) => void): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', target);
    const upstream = request(url, { method: req.method, headers: req.headers }, (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.headers);
      if (url.pathname === '/v3/watch') {
        let heldBack = '';
        reply.on('data', (chunk: Buffer) => {
          const text = chunk.toString();
          if (staging.holdWatch) {
            heldBack += text;
            if (text.includes('"DELETE"')) {
              staging.holdWatch = false;
              res.write(heldBack);
            }
          } else res.write(chunk);
          onWatchData(text);
        });
        reply.on('end', () => res.end());
        return;
      }
      const chunks: Buffer[] = [];
      reply.on('data', (c: Buffer) => chunks.push(c));
      reply.on('end', () => {
        // The answer is in hand (read before whatever the hook does); it is passed on after the hook.
        const kind = url.pathname === '/v3/kv/range' ? 'afterRead' : url.pathname === '/v3/kv/txn' ? 'afterEnqueue' : undefined;
        const hook = kind && staging[kind];
        if (kind) staging[kind] = undefined;
        void (hook?.() ?? Promise.resolve()).then(() => res.end(Buffer.concat(chunks)));
      });
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let cluster: EtcdCluster;

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
});

afterAll(async () => {
  await cluster?.stop();
});

describe('EtcdLocks waiter wake-up', () => {
  it('a deletion delivered by the watch before the queue read that names its key still wakes the waiter', async () => {
    const resource = uniqueResource('wake-race');
    const member = cluster.hosts[0]!;
    const direct = new EtcdLocks({ hosts: [member] });
    // The queue: A holds, C waits, B (through the proxy) waits behind C, watching C's key.
    const a = await direct.acquire(resource, 10_000);
    const giveUp = new AbortController();
    const c = direct.acquire(resource, 10_000, { timeoutMs: 10_000, signal: giveUp.signal }).catch((err: unknown) => err);
    let onWatch: (chunk: string) => void = () => undefined;
    const staging: Staging = {};
    const proxy = await stagingProxy(member, staging, (chunk) => onWatch(chunk));
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const waiterEngine = new EtcdLocks({ hosts: [proxied] });
    /** Resolves with the next watch chunk that carries a deletion. */
    const nextDeletion = (): Promise<void> =>
      new Promise((resolve) => {
        onWatch = (chunk) => chunk.includes('"DELETE"') && resolve();
      });
    const watching = new Promise<void>((resolve) => {
      onWatch = (chunk) => chunk.includes('"created":true') && resolve();
    });
    try {
      const b = waiterEngine.acquire(resource, 10_000, { timeoutMs: 5_000 });
      await watching;
      // C gives up: its key's deletion wakes B, which reads the queue again. That read names A;
      // before its answer reaches B, A releases and A's deletion reaches B through the watch.
      staging.afterRead = async () => {
        const deletion = nextDeletion();
        await a.release();
        await deletion;
      };
      giveUp.abort(new Error('C gives up'));
      expect(await c).toBeInstanceOf(Error);
      const lock = await b;
      expect(staging.afterRead).toBeUndefined();
      expect(lock.fencingToken).toBeGreaterThan(a.fencingToken!);
      await lock.release();
    } finally {
      await waiterEngine.close();
      await direct.close();
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it("a deletion the process's shared watch delivered before a new waiter's enqueue answer is not missed", async () => {
    const resource = uniqueResource('join-race');
    const member = cluster.hosts[0]!;
    const queue = `redlock/lock/${resource.length}:${resource}/q/`;
    const direct = new EtcdLocks({ hosts: [member] });
    let onWatch: (chunk: string) => void = () => undefined;
    const staging: Staging = {};
    const proxy = await stagingProxy(member, staging, (chunk) => onWatch(chunk));
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const engine = new EtcdLocks({ hosts: [proxied] });
    const watching = new Promise<void>((resolve) => {
      onWatch = (chunk) => chunk.includes('"created":true') && resolve();
    });
    try {
      // The queue: A holds; B1 (the proxied engine) waits, its watch of the queue is up; C waits.
      const a = await direct.acquire(resource, 10_000);
      const b1 = engine.acquire(resource, 10_000, { timeoutMs: 10_000 });
      await watching;
      const giveUp = new AbortController();
      const c = direct.acquire(resource, 10_000, { timeoutMs: 10_000, signal: giveUp.signal }).catch((err: unknown) => err);
      await until(async () => (await keysUnder(member, queue)).length === 3, 'C is queued');
      // B2 of the same engine enqueues behind C; before its enqueue's answer (which names C)
      // reaches it, C gives up and C's deletion goes by on the shared watch.
      staging.afterEnqueue = async () => {
        const deletion = new Promise<void>((resolve) => {
          onWatch = (chunk) => chunk.includes('"DELETE"') && resolve();
        });
        giveUp.abort(new Error('C gives up'));
        await deletion;
      };
      const b2 = engine.acquire(resource, 10_000, { timeoutMs: 8_000 });
      expect(await c).toBeInstanceOf(Error);
      await a.release();
      await (await b1).release();
      const lock = await b2;
      expect(staging.afterEnqueue).toBeUndefined();
      await lock.release();
    } finally {
      await engine.close();
      await direct.close();
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it("a deletion arriving with the watch's creation wakes a waiter that trusts its enqueue read", async () => {
    const resource = uniqueResource('created-race');
    const member = cluster.hosts[0]!;
    const direct = new EtcdLocks({ hosts: [member] });
    let onWatch: (chunk: string) => void = () => undefined;
    const staging: Staging = { holdWatch: true };
    const proxy = await stagingProxy(member, staging, (chunk) => onWatch(chunk));
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const engine = new EtcdLocks({ hosts: [proxied] });
    const created = new Promise<void>((resolve) => {
      onWatch = (chunk) => chunk.includes('"created":true') && resolve();
    });
    try {
      // A holds; B enqueues behind A (its enqueue read names A) and opens the queue's watch. The
      // proxy keeps the watch's creation from B until A has released, then hands B the creation
      // and A's deletion together: B hears of the deletion before it starts waiting for it.
      const a = await direct.acquire(resource, 10_000);
      const b = engine.acquire(resource, 10_000, { timeoutMs: 5_000 });
      await created;
      await a.release();
      const lock = await b;
      expect(staging.holdWatch).toBe(false);
      expect(lock.fencingToken).toBeGreaterThan(a.fencingToken!);
      await lock.release();
    } finally {
      await engine.close();
      await direct.close();
      proxy.closeAllConnections();
      proxy.close();
    }
  });
});
