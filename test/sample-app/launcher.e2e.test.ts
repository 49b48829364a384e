import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { buildSampleApp, runNode } from './build-sample-app.js';

const LAUNCHER = 'sample-app/dist/launcher/start.js';

/** Resolves with the connect error code, or 'connected' (nothing listens: ECONNREFUSED). */
function probe(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** What `npm start` runs after the build: the launcher of the sample app. */
describe('npm start launcher', () => {
  let dir: string;
  const baseEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, ORDERS_DB: join(dir, 'orders.sqlite'), RECONCILE_CRON: 'off' };
    delete env.REDLOCK_NODES;
    return env;
  };

  beforeAll(() => {
    buildSampleApp();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-launcher-'));
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('starts 5 local Redis nodes and the app, serves payments, and Ctrl-C stops all of it', async () => {
    const run = runNode(LAUNCHER, [], { ...baseEnv(), PORT: '0' });
    try {
      const [, url] = await run.waitFor(/listening on (http:\/\/\S+)/);
      const [, nodeList] = await run.waitFor(/lock nodes \(5, quorum 3\): (.+)/);
      const ports = nodeList!
        .trim()
        .split(' ')
        .map((u) => Number(new URL(u).port));
      expect(ports).toHaveLength(5);
      for (const port of ports) expect(await probe(port)).toBe('connected');
      const [, dataUrl] = await run.waitFor(/price-list data Redis (redis:\/\/[\d.]+:\d+)/);
      const dataPort = Number(new URL(dataUrl!).port);
      expect(ports).not.toContain(dataPort);
      const [, dashboard] = await run.waitFor(/lock dashboard: (http:\/\/\S+)/);
      expect(dashboard).toBe(`${url!}/locks/dashboard`);

      const paid = await request(url!).post('/orders/1/pay');
      expect(paid.status).toBe(201);
      expect((await request(url!).get('/health')).body).toMatchObject({
        status: 'ok',
        details: { redlock: { status: 'up', quorum: 3, reachable: 5 } },
      });

      // The dashboard answers this (loopback) client; the price list has its data Redis.
      const page = await request(url!).get('/locks/dashboard');
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/text\/html/);
      const changed = await request(url!).put('/prices/sku-1').send({ priceCents: 1_299 });
      expect(changed.status).toBe(200);
      expect((await request(url!).get('/prices')).body.prices).toContainEqual({
        sku: 'sku-1',
        priceCents: 1_299,
        fence: changed.body.fence,
      });

      run.child.kill('SIGINT');
      expect(await run.exit).toBe(0);
      for (const port of [...ports, dataPort]) expect(await probe(port)).toBe('ECONNREFUSED');
      expect(await probe(Number(new URL(url!).port))).toBe('ECONNREFUSED');
    } finally {
      run.child.kill('SIGKILL');
    }
  }, 60_000);

  it('says clearly when PORT is taken, before starting anything', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = runNode(LAUNCHER, [], { ...baseEnv(), PORT: String(port) });
      expect(await run.exit).toBe(1);
      expect(run.stderr()).toContain(`Port ${port} on 127.0.0.1 is already in use`);
      expect(run.stdout()).not.toContain('starting 5 local Redis nodes');
    } finally {
      blocker.close();
    }
  }, 30_000);

  it('says how to install redis-server when it is missing', async () => {
    const run = runNode(LAUNCHER, [], { ...baseEnv(), PORT: '0', REDIS_SERVER_BIN: join(dir, 'no-such-redis-server') });
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toContain('apt-get install -y redis-server');
    expect(run.stderr()).toContain('REDLOCK_NODES');
  }, 30_000);
});
