/**
 * `LOCK_ENGINE=etcd npm start`: the launcher starts a local 3-member etcd cluster and the same
 * app on it; an order is paid once (the second payment finds it paid, with the fencing token
 * of the first), /health names the etcd members and their leader, and Ctrl-C stops everything.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { buildSampleApp, runNode } from './build-sample-app.js';

const LAUNCHER = 'sample-app/dist/launcher/start.js';

/** Resolves with the connect error code, or 'connected'. */
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

describe('LOCK_ENGINE=etcd npm start', () => {
  let dir: string;

  beforeAll(() => {
    buildSampleApp();
    dir = mkdtempSync(join(tmpdir(), 'redlock-nest-launcher-etcd-'));
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('starts 3 etcd members and the app on them, pays an order once, and Ctrl-C stops all of it', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      LOCK_ENGINE: 'etcd',
      PORT: '0',
      ORDERS_DB: join(dir, 'orders.sqlite'),
      RECONCILE_CRON: 'off',
    };
    delete env.ETCD_HOSTS;
    delete env.REDLOCK_NODES;
    const run = runNode(LAUNCHER, [], env);
    try {
      const [, url] = await run.waitFor(/listening on (http:\/\/\S+)/);
      const [, memberList] = await run.waitFor(/etcd members \(3, quorum 2\): (.+)/);
      const members = memberList!.trim().split(' ');
      expect(members).toHaveLength(3);
      for (const member of members) expect(await probe(Number(new URL(member).port))).toBe('connected');
      expect(run.stdout()).not.toContain('Redis nodes');

      const paid = await request(url!).post('/orders/7/pay');
      expect(paid.status).toBe(201);
      expect(paid.body).toMatchObject({ status: 'paid', orderId: 7 });
      const again = await request(url!).post('/orders/7/pay');
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'already-paid', orderId: 7 });
      const order = await request(url!).get('/orders/7').expect(200);
      expect(order.body.fence).toBe(paid.body.fence);
      expect(order.body.payments).toHaveLength(1);

      const health = (await request(url!).get('/health').expect(200)).body.details.redlock;
      expect(health).toMatchObject({ status: 'up', quorum: 2, reachable: 3 });
      expect(health.nodes.map((n: { node: string }) => n.node)).toEqual(members.map((m) => new URL(m).host));
      expect(health.nodes.filter((n: { role: string }) => n.role === 'leader')).toHaveLength(1);

      run.child.kill('SIGINT');
      expect(await run.exit).toBe(0);
      expect(run.stdout()).toContain('stopping the app and the 3 etcd members');
      for (const member of members) expect(await probe(Number(new URL(member).port))).toBe('ECONNREFUSED');
      expect(await probe(Number(new URL(url!).port))).toBe('ECONNREFUSED');
    } finally {
      run.child.kill('SIGKILL');
    }
  }, 60_000);

  it('says what ETCD_HOSTS must look like', async () => {
    const run = runNode(LAUNCHER, [], { ...process.env, LOCK_ENGINE: 'etcd', ETCD_HOSTS: 'etcd-a:2379', PORT: '0' });
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toContain('ETCD_HOSTS entry "etcd-a:2379" is not an http:// or https:// client URL with its port');
    expect(run.stdout()).not.toContain('starting a local');
  }, 30_000);
});
