/**
 * TLS to every lock node (`rediss://`), against TLS-only redis-servers whose
 * certificate is signed by a CA generated in the test: trusted via ioredis `tls`
 * options, via a client passed in, and via NODE_EXTRA_CA_CERTS for plain rediss:// URL
 * strings. Without the CA, and over plain TCP, the lock fails as "quorum unavailable".
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { makePki, startTlsServer, type Pki, type TlsServer } from './tls-fixture.js';
import { lockWorkflow } from './workflow.js';

describe('TLS', () => {
  let pki: Pki;
  let servers: TlsServer[];

  beforeAll(async () => {
    pki = makePki();
    servers = [];
    for (let i = 0; i < 3; i++) servers.push(await startTlsServer(pki));
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.server.stop()));
    pki.remove();
  });

  it('locks over TLS with the CA in ioredis options', async () => {
    const nodes = servers.map((s) => ({ host: '127.0.0.1', port: s.tlsPort, tls: { ca: pki.ca } }));
    expect(await lockWorkflow(nodes)).toEqual([]);
  });

  it('locks over TLS with clients passed in (rediss:// URL plus the CA)', async () => {
    const clients = servers.map(
      (s) =>
        new Redis(`rediss://127.0.0.1:${s.tlsPort}`, {
          tls: { ca: pki.ca },
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          commandTimeout: 500,
        }),
    );
    try {
      const redlock = new Redlock(clients, { onWarning: () => undefined });
      const lock = await redlock.acquire('tls-client', 5_000, { fencing: true });
      expect(lock.fencingToken).toBeGreaterThan(0n);
      expect((await lock.release()).released).toBeGreaterThanOrEqual(2);
      await redlock.close();
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

  it('locks over TLS with node-redis clients passed in (rediss:// URL plus the CA), release notices included', async () => {
    const clients = servers.map((s) =>
      createClient({ url: `rediss://127.0.0.1:${s.tlsPort}`, disableOfflineQueue: true, socket: { tls: true, ca: pki.ca } }).on(
        'error',
        () => undefined,
      ),
    );
    try {
      // Without cohorting: the waiter is in the same instance, and the notice path is what is tested here.
      const redlock = new Redlock(clients, { onWarning: () => undefined, cohort: false });
      const lock = await redlock.acquire('tls-node-redis', 60_000, { fencing: true });
      expect(lock.fencingToken).toBeGreaterThan(0n);
      // A waiter is woken by the release notice on its TLS subscriber connection (a poll would wait 10 min).
      const waiting = redlock.acquire('tls-node-redis', 5_000, { retry: { retries: 5, delayMs: 600_000, jitterMs: 0 } });
      await new Promise((resolve) => setImmediate(resolve));
      expect((await lock.release()).released).toBeGreaterThanOrEqual(2);
      await (await waiting).release();
      await redlock.close();
    } finally {
      for (const c of clients) if (c.isOpen) c.destroy();
    }
  });

  it('locks with plain rediss:// URL strings when the CA is trusted process-wide (NODE_EXTRA_CA_CERTS)', () => {
    const urls = servers.map((s) => `rediss://127.0.0.1:${s.tlsPort}`);
    const script = `
      import { Redlock } from '@redlock-nest/core';
      const redlock = new Redlock(${JSON.stringify(urls)}, { onWarning: () => {} });
      const lock = await redlock.acquire('tls-url', 5000, { fencing: true });
      const { released } = await lock.release();
      await redlock.close();
      console.log('token=' + lock.fencingToken + ' released=' + released);`;
    const child = spawnSync(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      env: { ...process.env, NODE_EXTRA_CA_CERTS: pki.caFile, NODE_OPTIONS: '' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.stderr).toBe('');
    expect(child.stdout).toMatch(/token=\d+ released=[23]/);
    expect(child.status).toBe(0);
  });

  it('refuses a server whose certificate it cannot verify', async () => {
    const redlock = new Redlock(
      servers.map((s) => `rediss://127.0.0.1:${s.tlsPort}`),
      { nodeTimeoutMs: 500, onWarning: () => undefined },
    );
    try {
      const err = await redlock.acquire('no-ca', 1_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QuorumUnavailableError);
      const errors = (err as QuorumUnavailableError).nodes.map((n) => n.error ?? '').join('\n');
      expect(errors).toMatch(/certificate/);
      expect((err as Error).message).toMatch(/TLS handshake.*tls: \{ ca \}/);
    } finally {
      await redlock.close();
    }
  });

  it('survives failing TLS handshakes: closing never leaves a socket error uncaught (process crash)', () => {
    // Regression: ioredis listens for a socket's first error only; the server's alert after a
    // rejected certificate came second and crashed the process (about 1 close in 8).
    const urls = servers.map((s) => `rediss://127.0.0.1:${s.tlsPort}`);
    const script = `
      import { Redlock } from '@redlock-nest/core';
      let uncaught = 0, quorum = 0;
      process.on('uncaughtException', () => { uncaught++; });
      for (let i = 0; i < 60; i++) {
        const redlock = new Redlock(${JSON.stringify(urls)}, { nodeTimeoutMs: 500, onWarning: () => {} });
        await redlock.acquire('x', 1000).catch((e) => { if (e.name === 'QuorumUnavailableError') quorum++; });
        await redlock.close();
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      console.log('uncaught=' + uncaught + ' quorum=' + quorum);`;
    const child = spawnSync(process.execPath, [...CHILD_GUARD_ARGS, '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      env: { ...process.env, NODE_OPTIONS: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stdout.trim()).toBe('uncaught=0 quorum=60');
    expect({ status: child.status, stderr: child.stderr }).toEqual({ status: 0, stderr: '' });
  }, 70_000);

  it('cannot talk plain TCP to a TLS-only node', async () => {
    const redlock = new Redlock(
      servers.map((s) => `redis://127.0.0.1:${s.tlsPort}`),
      { nodeTimeoutMs: 300, onWarning: () => undefined },
    );
    try {
      await expect(redlock.acquire('plain', 1_000)).rejects.toBeInstanceOf(QuorumUnavailableError);
    } finally {
      await redlock.close();
    }
  });
});
