/**
 * `redlock.checkNodes()` against real redis-servers started with each configuration that
 * silently weakens or breaks locks: an eviction policy with maxmemory, no persistence, a
 * replica, the same server twice, and an ACL user missing a command.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redlock, type RedisNodeInput } from '@redlock-nest/core';
import type { NodeCheckReport, NodeFinding } from '@redlock-nest/core/operator';
import { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.js';
import { LOCK_NODE_ACL } from '../security/acl-rules.js';

const servers: RedisServer[] = [];
const redlocks: Redlock[] = [];
afterAll(async () => {
  await Promise.all(redlocks.map((r) => r.close()));
  await Promise.all(servers.map((s) => s.stop()));
});

async function server(args: string[] = [], persistent = false): Promise<RedisServer> {
  const s = await RedisServer.start({ args, persistent });
  servers.push(s);
  return s;
}

async function check(urls: RedisNodeInput[]): Promise<NodeCheckReport> {
  const redlock = new Redlock(urls, { onWarning: () => undefined });
  redlocks.push(redlock);
  return redlock.checkNodes({ clockSampleMs: 50 });
}

function finding(report: NodeCheckReport, check: NodeFinding['check'], node?: string): NodeFinding {
  const found = report.findings.find((f) => f.check === check && (node === undefined || f.node === node));
  if (!found) throw new Error(`no ${check} finding in ${JSON.stringify(report.findings)}`);
  return found;
}

describe('checkNodes', () => {
  it('a well-configured node (AOF, appendfsync always, noeviction, a master) has only ok findings', async () => {
    const s = await server([], true);
    const report = await check([s.url]);
    expect(report.findings.filter((f) => f.level !== 'ok')).toEqual([]);
    expect(report.ok).toBe(true);
    expect(finding(report, 'clock').message).toMatch(/clock rate [\d.]+× the local monotonic clock/);
    expect(finding(report, 'latency').message).toMatch(/round trip/);
  });

  it('no persistence: warn, naming the restart rule and the fix', async () => {
    const s = await server();
    const report = await check([s.url]);
    const f = finding(report, 'persistence');
    expect(f.level).toBe('warn');
    expect(f.message).toMatch(/no persistence/);
    expect(f.fix).toMatch(/appendonly yes/);
    expect(report.ok).toBe(true);
  });

  it('RDB snapshots only: warn', async () => {
    const s = await server(['--save', '3600 1']);
    const f = finding(await check([s.url]), 'persistence');
    expect(f.level).toBe('warn');
    expect(f.message).toMatch(/RDB snapshots only/);
  });

  it('an eviction policy with maxmemory set is an error; without maxmemory a warning', async () => {
    const bad = await server(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
    const latent = await server(['--maxmemory-policy', 'volatile-ttl']);
    const report = await check([bad.url, latent.url]);
    const error = finding(report, 'eviction', `127.0.0.1:${bad.port}`);
    expect(error.level).toBe('error');
    expect(error.message).toMatch(/allkeys-lru/);
    expect(error.fix).toMatch(/noeviction/);
    expect(finding(report, 'eviction', `127.0.0.1:${latent.port}`).level).toBe('warn');
    expect(report.ok).toBe(false);
  });

  it('a replica is an error', async () => {
    const master = await server();
    const replica = await server(['--replicaof', '127.0.0.1', String(master.port)]);
    const report = await check([master.url, replica.url]);
    expect(finding(report, 'role', `127.0.0.1:${master.port}`).level).toBe('ok');
    const f = finding(report, 'role', `127.0.0.1:${replica.port}`);
    expect(f.level).toBe('error');
    expect(f.message).toMatch(/replica/);
    expect(report.ok).toBe(false);
  });

  it('the same server listed twice is an error', async () => {
    // The same address twice is refused when the Redlock is created; under two addresses (TCP and
    // its unix socket) only the run_id tells, which is what the check compares.
    const dir = mkdtempSync(join(tmpdir(), 'redlock-check-'));
    const socket = join(dir, 'redis.sock');
    const s = await server(['--unixsocket', socket, '--unixsocketperm', '700']);
    const report = await check([s.url, { path: socket }]).finally(() => rmSync(dir, { recursive: true, force: true }));
    const dup = report.findings.filter((f) => f.check === 'duplicate' && f.level === 'error');
    expect(dup).toHaveLength(1);
    expect(dup[0]!.message).toMatch(/same server/);
    expect(report.ok).toBe(false);
  });

  it('an ACL user missing a command the library sends is an error naming it', async () => {
    const s = await server();
    const admin = new Redis(s.url);
    try {
      // The least-privilege list of docs/security.md without +publish.
      const withoutPublish = LOCK_NODE_ACL.filter((rule) => rule !== '+publish');
      await admin.call('ACL', 'SETUSER', 'limited', 'on', '>secret', 'resetkeys', 'resetchannels', ...withoutPublish);
    } finally {
      admin.disconnect();
    }
    const report = await check([`redis://limited:secret@127.0.0.1:${s.port}`]);
    const f = finding(report, 'acl');
    expect(f.level).toBe('error');
    expect(f.message).toMatch(/publish/);
    expect(f.fix).toMatch(/docs\/security\.md/);
    expect(JSON.stringify(report)).not.toMatch(/secret/);
  });

  it('an unreachable node is an error', async () => {
    const s = await server();
    await s.kill();
    const report = await check([s.url]);
    expect(finding(report, 'reachable').level).toBe('error');
  });
});
