/**
 * The etcd engine's HTTP transport (packages/etcd/src/http-transport.ts): what a call that no
 * member answered reports for each member. No etcd here: a member is a TCP server that behaves.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { EtcdTransport, EtcdUnreachableError } from '../../packages/etcd/src/http-transport.js';
import { resolveEtcdOptions } from '../../packages/etcd/src/options.js';
import { rejection } from './helpers.js';

describe('etcd HTTP transport', () => {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    if (server) await new Promise((resolve) => server!.close(resolve));
  });

  it("keeps a member's error as its outcome when a retry cut short by the deadline times out", async () => {
    // The first connection is reset at once (an error); every later one is held unanswered
    // (the retry then runs into the deadline, as under load when its budget is a sliver).
    let connections = 0;
    server = createServer((socket) => {
      sockets.add(socket);
      if (connections++ === 0) socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const transport = new EtcdTransport(resolveEtcdOptions({ hosts: [`http://127.0.0.1:${port}`] }));
    try {
      const err = await rejection(transport.call('/v3/kv/range', {}, performance.now() + 1_000));
      expect(err).toBeInstanceOf(EtcdUnreachableError);
      expect(connections).toBe(2);
      expect((err as EtcdUnreachableError).message).toMatch(/127\.0\.0\.1:\d+=error \(/);
    } finally {
      transport.close();
    }
  });
});
