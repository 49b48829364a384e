/**
 * The `redlock-nest` CLI on etcd (`--etcd` or `REDLOCK_ETCD`), the built bin spawned against
 * real etcd clusters: `check` (members, leader, raft index; a 1-member cluster has no fault
 * tolerance; members on different versions, staged by a proxy that reports another version for
 * a real member), `inspect` (holder, waiters, tokens, owner hashes), `release --force` (the
 * holder's lease revoked: the waiter is granted with a greater token, the holder's signal
 * aborts, the lease's other resources are named). Needs `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { LockLostError, RedlockArgumentError, RedlockClosedError } from '@redlock-nest/core';
import { EtcdLocks, EtcdOperator } from '@redlock-nest/etcd';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { aborted, EtcdCluster, rejection, uniqueResource, until } from './helpers.js';

const BIN = fileURLToPath(new URL('../../packages/core/dist/cli/cli.js', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, BIN, ...args], {
      env: { ...process.env, NODE_OPTIONS: '', REDLOCK_NODES: '', REDLOCK_ETCD: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const hash = (leaseId: string): string => createHash('sha256').update(leaseId).digest('hex').slice(0, 12);
const hostOf = (url: string): string => new URL(url).host;

/** An HTTP proxy to one member that reports `version` in its status: a member mid-upgrade. */
async function versionProxy(target: string, version: string): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', target);
    const upstream = request(url, { method: req.method, headers: req.headers }, (reply) => {
      const chunks: Buffer[] = [];
      reply.on('data', (c: Buffer) => chunks.push(c));
      reply.on('end', () => {
        let body = Buffer.concat(chunks).toString();
        if (url.pathname === '/v3/maintenance/status') body = JSON.stringify({ ...JSON.parse(body), version });
        res.writeHead(reply.statusCode ?? 502, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let cluster: EtcdCluster;
let locks: EtcdLocks;

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
  locks = new EtcdLocks({ hosts: cluster.hosts, requestTimeoutMs: 400 });
});

afterAll(async () => {
  await locks?.close();
  await cluster?.stop();
});

describe('redlock-nest --etcd', () => {
  it('check: every member reachable with its role and raft index, one leader, 3 members: exit 0', async () => {
    const human = await cli(['check', '--etcd', cluster.hosts.join(',')]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^redlock-nest check --etcd: 3 member\(s\), quorum 2, leader 127\.0\.0\.1:\d+$/m);
    expect(human.stdout).toContain('3 members: tolerates 1 failure(s)');
    expect(human.stdout).toContain('0 error(s), 0 warning(s)');
    const json = await cli(['check', '--json'], { REDLOCK_ETCD: cluster.hosts.join(',') });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: true, size: 3, quorum: 2, leader: hostOf((await cluster.leader()).url) });
    expect(report.members).toHaveLength(3);
    for (const m of report.members) expect(m).toMatchObject({ status: 'up', version: expect.stringMatching(/^3\./) });
  });

  it('check: a 1-member cluster has no fault tolerance (a warning), a dead member is an error (exit 1)', async () => {
    const single = await EtcdCluster.start({ members: 1 });
    try {
      const run = await cli(['check', '--json', '--etcd', single.hosts[0]!]);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout).findings).toContainEqual({
        node: 'cluster',
        check: 'members',
        level: 'warn',
        message: '1 member(s): no fault tolerance, one member down stops every lock',
        fix: 'run 3 or 5 members (etcdctl member add)',
      });
      await single.members[0]!.kill();
      const down = await cli(['check', '--etcd', single.hosts[0]!, '--timeout', '300']);
      expect(down.code).toBe(1);
      expect(down.stdout).toMatch(/ERROR\s+reachable\s+unreachable: ECONNREFUSED/);
    } finally {
      await single.stop();
    }
  });

  it('check: members on different versions are reported (a rolling upgrade half done)', async () => {
    const proxy = await versionProxy(cluster.hosts[2]!, '3.5.17');
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const run = await cli(['check', '--json', '--etcd', [...cluster.hosts.slice(0, 2), proxied].join(',')]);
      expect(run.code).toBe(0);
      const findings = JSON.parse(run.stdout).findings;
      const version = findings.find((f: { check: string }) => f.check === 'version');
      expect(version).toMatchObject({ level: 'warn', fix: 'finish the rolling upgrade: one version on every member' });
      expect(version.message).toContain(`3.5.17 on ${hostOf(proxied)}`);
      expect(version.message).toMatch(new RegExp(`3\\.4\\.\\d+ on ${hostOf(cluster.hosts[0]!)}, ${hostOf(cluster.hosts[1]!)}`));
      // The member behind the proxy is not among the hosts given: the client cannot fail over to it.
      expect(findings).toContainEqual(expect.objectContaining({ node: hostOf(cluster.hosts[2]!), check: 'listed', level: 'warn' }));
    } finally {
      proxy.close();
    }
  });

  it('inspect: the holder, the waiter, their tokens and owner hashes, and semaphore keys apart', async () => {
    const resource = uniqueResource('inspect');
    const held = await locks.acquire(resource, 10_000);
    const waiting = locks.acquire(resource, 10_000, { timeoutMs: 20_000 });
    const permit = await locks.acquire(resource, 10_000, { permits: 2 });
    let state: { lock: Array<Record<string, unknown>>; semaphore: Array<Record<string, unknown>>; holder?: string } = {
      lock: [],
      semaphore: [],
    };
    // The waiter's key is in the queue once its enqueue transaction is through (no event tells).
    await until(async () => {
      state = JSON.parse((await cli(['inspect', resource, '--json', '--etcd', cluster.hosts.join(',')])).stdout);
      return state.lock.length === 2;
    }, 'the waiter is queued');
    expect(state.holder).toBe(hash(held.value));
    expect(state.lock[0]).toMatchObject({ owner: hash(held.value), mode: 'write', token: String(held.fencingToken), holds: true });
    expect(state.lock[1]).toMatchObject({ mode: 'write', holds: false });
    expect(BigInt(state.lock[1]!.token as string)).toBeGreaterThan(held.fencingToken!);
    expect(state.semaphore).toEqual([expect.objectContaining({ owner: hash(permit.value), mode: 'permit' })]);
    const human = await cli(['inspect', resource, '--etcd', cluster.hosts.join(',')]);
    expect(human.stdout).toContain(
      `${resource}: held by ${hash(held.value)} (write, token ${held.fencingToken}), 1 waiting; 1 semaphore key(s)`,
    );
    expect(human.stdout).not.toContain(held.value);
    await held.release();
    await (await waiting).release();
    await permit.release();
  });

  it('release --force: revokes the holder; the waiter gets a greater token, the holder is told', async () => {
    const resource = uniqueResource('stuck');
    const other = uniqueResource('stuck-other');
    let inside!: (token: bigint) => void;
    const entered = new Promise<bigint>((resolve) => (inside = resolve));
    const holding = locks.using([resource, other], 3_000, async (lock) => {
      inside(lock.fencingToken!);
      return aborted(lock.signal);
    });
    const token = await entered;
    const waiter = locks.acquire(resource, 5_000, { timeoutMs: 20_000 });
    const refused = await cli(['release', resource, '--reason', 'host died', '--etcd', cluster.hosts.join(',')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('confirm with --force');
    const run = await cli(['release', '--force', resource, '--reason', 'host died, INC-7', '--json', '--etcd', cluster.hosts.join(',')]);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ resource, released: 1, alsoReleased: [other], revokedToken: String(token), reason: 'host died, INC-7' });
    const next = await waiter;
    expect(next.fencingToken).toBeGreaterThan(token);
    const lost = await holding.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(lost).toBeInstanceOf(LockLostError);
    expect((lost as LockLostError).reason).toBe('not-owner');
    await next.release();
    const again = await cli(['release', '--force', resource, '--reason', 'twice', '--etcd', cluster.hosts.join(',')]);
    expect(again.stdout).toContain(`${resource}: nothing to release, no lease held it`);
  });

  it('refuses --nodes with --etcd, and names the members when none answers', async () => {
    const both = await cli(['inspect', 'x', '--nodes', 'redis://127.0.0.1:1', '--etcd', cluster.hosts[0]!]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--nodes (Redis) and --etcd name different lock stores: give one');
    const dead = await cli(['inspect', 'x', '--etcd', 'http://127.0.0.1:1', '--timeout', '200']);
    expect(dead.code).toBe(1);
    expect(dead.stderr).toContain('no etcd member answered with a leader in time');
    expect(dead.stderr).toContain('127.0.0.1:1=error');
  });

  it('EtcdOperator refuses bad input with the fix named, and calls after close()', async () => {
    expect(() => new EtcdOperator({ hosts: ['etcd-a:2379'] })).toThrow(/client URL with its port/);
    const operator = new EtcdOperator({ hosts: cluster.hosts });
    expect(await rejection(operator.forceRelease('x', { reason: ' ' }))).toBeInstanceOf(RedlockArgumentError);
    expect((await rejection(operator.inspect(''))).message).toContain('inspect(resource) needs a non-empty resource name');
    await operator.close();
    expect(await rejection(operator.inspect('x'))).toBeInstanceOf(RedlockClosedError);
  });
});
