/**
 * The `redlock-nest` CLI end to end: the built bin spawned as a child process against
 * spawned redis-servers, exit codes, human and --json output, and the progress line.
 * Needs `npm run build` first (it runs packages/core/dist/cli/cli.js).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redlock } from '@redlock-nest/core';
import { Redis } from 'ioredis';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';
import { RedisServer } from '../harness/redis-server.js';
import { uniqueResource } from '../harness/test-utils.js';

const BIN = fileURLToPath(new URL('../../packages/core/dist/cli/cli.js', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function start(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...CHILD_GUARD_ARGS, BIN, ...args], {
    env: { ...process.env, NODE_OPTIONS: '', REDLOCK_NODES: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs the CLI to completion. */
function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = start(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Resolves with the accumulated text once `stream` has printed something matching `pattern`. */
function printed(stream: NodeJS.ReadableStream, pattern: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (d: Buffer): void => {
      text += d.toString();
      if (pattern.test(text)) {
        stream.off('data', onData);
        resolve(text);
      }
    };
    stream.on('data', onData);
  });
}

describe('redlock-nest CLI', () => {
  let good: RedisServer;
  let evicting: RedisServer;
  let watched: RedisServer;
  const redlocks: Redlock[] = [];
  beforeAll(async () => {
    [good, evicting, watched] = await Promise.all([
      RedisServer.start({ persistent: true }),
      RedisServer.start({ args: ['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru'] }),
      RedisServer.start({ args: ['--notify-keyspace-events', 'K$x'] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.close()));
    await Promise.all([good, evicting, watched].map((s) => s?.stop()));
  });

  function redlock(url: string): Redlock {
    const r = new Redlock([url], { onWarning: () => undefined });
    redlocks.push(r);
    return r;
  }

  it('check exits 1 on an eviction policy with maxmemory and says so, with the fix', async () => {
    const run = await cli(['check', '--nodes', evicting.url]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/ERROR\s+eviction\s+maxmemory-policy allkeys-lru/);
    expect(run.stdout).toMatch(/fix: CONFIG SET maxmemory-policy noeviction/);
    expect(run.stdout).toMatch(/1 error\(s\)/);
  });

  it('check --json exits 0 on a well-configured node, nodes from REDLOCK_NODES', async () => {
    const run = await cli(['check', '--json'], { REDLOCK_NODES: good.url });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { ok: boolean; findings: Array<{ level: string }> };
    expect(report.ok).toBe(true);
    expect(report.findings.filter((f) => f.level !== 'ok')).toEqual([]);
  });

  it('check warns that the largest TTL is unknown on a node that loses its locks on a restart, and --max-ttl says how long it sits out', async () => {
    const volatile = await RedisServer.start();
    try {
      const run = await cli(['check', '--nodes', volatile.url]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('redlock-nest check: 1 node(s), quorum 1');
      expect(run.stdout).toMatch(/WARN\s+restart\s+the largest TTL in use is not known/);
      expect(run.stdout).toContain('pass --max-ttl <ms> to check');
      // Just started: within a 60 s TTL, it sits out of quorums for about that long.
      const known = await cli(['check', '--json', '--max-ttl', '60000', '--nodes', volatile.url]);
      expect(known.code).toBe(0);
      const report = JSON.parse(known.stdout) as {
        findings: Array<{ node: string; check: string; level: string; message: string; fix?: string }>;
      };
      const restart = report.findings.filter((f) => f.check === 'restart');
      expect(restart).toHaveLength(1);
      expect(restart[0]).toMatchObject({ node: `127.0.0.1:${volatile.port}`, level: 'warn' });
      expect(restart[0]!.message).toMatch(/less than the largest TTL \(60000 ms\)/);
      expect(restart[0]!.fix).toMatch(/^wait \d+ s before restarting another node$/);
      const bad = await cli(['check', '--max-ttl', 'soon', '--nodes', volatile.url]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--max-ttl must be the largest lock TTL in ms');
    } finally {
      await volatile.stop();
    }
  });

  it('check shows a progress line on stderr while a node does not answer', async () => {
    const slow = await RedisServer.start();
    try {
      slow.pause();
      const run = await cli(['check', '--timeout', '1500', '--nodes', `${good.url},${slow.url}`]);
      expect(run.stderr).toContain(`probing: waiting for 127.0.0.1:${slow.port}`);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/ERROR\s+reachable\s+not reachable/);
    } finally {
      await slow.stop();
    }
  });

  it('check names a dead port ECONNREFUSED, and prints no progress line when no probe waits', async () => {
    const gone = await RedisServer.start();
    await gone.stop(); // nothing listens on its port now
    const run = await cli(['check', '--nodes', `${good.url},${gone.url}`]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`ERROR\\s+reachable\\s+not reachable: ECONNREFUSED 127\\.0\\.0\\.1:${gone.port}`));
    expect(run.stdout).not.toContain('Connection is closed');
    // The live node answers and the dead one refuses at once: nothing to wait for.
    expect(run.stderr).not.toContain('probing:');
  });

  it('watch names a dead port ECONNREFUSED and exits 1 when no node can be watched', async () => {
    const gone = await RedisServer.start();
    await gone.stop();
    const run = await cli(['watch', '--nodes', gone.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`no node could be watched: 127.0.0.1:${gone.port}: ECONNREFUSED 127.0.0.1:${gone.port}`);
    expect(run.stderr).not.toContain('Connection is closed');
  });

  it('check with the same server listed twice prints the whole report with a duplicate ERROR row', async () => {
    const run = await cli(['check', '--nodes', `${good.url},${good.url}`]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('redlock-nest check: 2 node(s), quorum 2');
    expect(run.stdout).toMatch(/ok\s+reachable\s+Redis /);
    expect(run.stdout).toContain(`127.0.0.1:${good.port} (nodes[1])`);
    expect(run.stdout).toMatch(
      new RegExp(`ERROR\\s+duplicate\\s+nodes\\[1\\] \\(127\\.0\\.0\\.1:${good.port}\\) is the same server as nodes\\[0\\]`),
    );
    expect(run.stdout).toContain('fix: list each independent server once');
    expect(run.stdout).toMatch(/1 error\(s\), 0 warning\(s\)/);
    const json = await cli(['check', '--json', '--nodes', `${good.url},${good.url}`]);
    const report = JSON.parse(json.stdout) as { ok: boolean; findings: Array<{ check: string; level: string }> };
    expect(report.ok).toBe(false);
    expect(report.findings.filter((f) => f.level === 'error').map((f) => f.check)).toEqual(['duplicate']);
  });

  it('no nodes, an unknown command, or release without --force: exit 2 with the usage', async () => {
    for (const args of [['check'], ['frobnicate', '--nodes', good.url], ['release', 'x', '--reason', 'r', '--nodes', good.url]]) {
      const run = await cli(args);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/usage: redlock-nest/);
    }
  });

  it('inspect shows the holder as a hash, and release --force frees it and raises the fencing counter', async () => {
    const resource = uniqueResource('cli');
    const lock = await redlock(good.url).acquire(resource, 30_000, { fencing: true });
    const inspected = await cli(['inspect', resource, '--json', '--nodes', good.url]);
    expect(inspected.code).toBe(0);
    const state = JSON.parse(inspected.stdout) as { holder: string; nodes: Array<{ held: boolean; fencingCounter: string }> };
    expect(state.holder).toMatch(/^[0-9a-f]{12}$/);
    expect(state.nodes[0]).toMatchObject({ held: true, fencingCounter: String(lock.fencingToken) });
    expect(inspected.stdout).not.toContain(lock.value);

    const human = await cli(['inspect', resource, '--nodes', good.url]);
    expect(human.stdout).toContain(`${resource}: held by ${state.holder}`);

    const released = await cli(['release', '--force', resource, '--reason', 'stuck after deploy', '--nodes', good.url]);
    expect(released.code).toBe(0);
    expect(released.stdout).toContain(`force-released ${resource}: deleted on 1 node(s), fencing counter now ${lock.fencingToken! + 1n}`);
    const admin = new Redis(good.url);
    try {
      expect(await admin.get(`redlock:lock:${resource}`)).toBeNull();
    } finally {
      admin.disconnect();
    }
  });

  it("inspect shows a read-write lock's readers and a semaphore's k of N permits, each holder as a hash", async () => {
    const reading = uniqueResource('cli-rw');
    const readers = [
      await redlock(good.url).acquire(reading, 30_000, { mode: 'read' }),
      await redlock(good.url).acquire(reading, 30_000, { mode: 'read' }),
    ];
    const rw = await cli(['inspect', reading, '--nodes', good.url]);
    expect(rw.code).toBe(0);
    expect(rw.stdout).toContain(`${reading}: read-locked by 2 reader(s) on a quorum (quorum 1)`);
    expect(rw.stdout.match(/^ {2}reader {2}[0-9a-f]{12} {2}on 1 node\(s\)/gm)).toHaveLength(2);
    expect(rw.stdout).toMatch(/read phase {2}ttl/);
    expect(rw.stdout).not.toContain(readers[0]!.value);

    const exporting = uniqueResource('cli-sem');
    const permits = [
      await redlock(good.url).acquire(exporting, 30_000, { permits: 3 }),
      await redlock(good.url).acquire(exporting, 30_000, { permits: 3 }),
    ];
    const sem = await cli(['inspect', exporting, '--permits', '3', '--nodes', good.url]);
    expect(sem.code).toBe(0);
    expect(sem.stdout).toContain(`${exporting}: semaphore, 2 of 3 permit(s) in use on a quorum (quorum 1)`);
    expect(sem.stdout.match(/^ {2}permit \d {2}[0-9a-f]{12} {2}on 1 node\(s\)/gm)).toHaveLength(2);
    expect((await cli(['inspect', exporting, '--permits', 'x', '--nodes', good.url])).code).toBe(2);
    await Promise.all([...readers, ...permits].map((l) => l.release()));
  });

  it('watch prints semaphore permits and readers as what they are', async () => {
    const admin = new Redis(watched.url);
    try {
      await admin.config('SET', 'notify-keyspace-events', 'K$xz');
      const child = start(['watch', '--json', '--nodes', watched.url]);
      const out: string[] = [];
      child.stdout.on('data', (d: Buffer) => out.push(d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      await printed(child.stderr, /watching 1 node/);
      const resource = uniqueResource('watched-primitives');
      const seen = printed(child.stdout, /"released","resource":"[^"]+","primitive":"read"/);
      const permit = await redlock(watched.url).acquire(resource, 10_000, { permits: 2 });
      await permit.release();
      const reader = await redlock(watched.url).acquire(resource, 10_000, { mode: 'read' });
      await reader.release();
      await seen;
      const events = out
        .join('')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { event: string; resource: string; primitive: string; permit?: number })
        .filter((e) => e.resource === resource);
      const semaphore = events.filter((e) => e.primitive === 'semaphore');
      expect(semaphore.map((e) => e.event)).toEqual(['acquired', 'released']);
      expect(semaphore.every((e) => e.permit === semaphore[0]!.permit && typeof e.permit === 'number')).toBe(true);
      expect(events.filter((e) => e.primitive === 'read').map((e) => e.event)).toEqual(['acquired', 'released']);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      await admin.config('SET', 'notify-keyspace-events', 'K$x');
      admin.disconnect();
    }
  });

  it('watch prints acquisitions and releases as they happen, and exits 0 on SIGINT', async () => {
    const child = start(['watch', '--json', '--nodes', watched.url]);
    const out: string[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await printed(child.stderr, /watching 1 node/);
    const resource = uniqueResource('watched');
    const seen = printed(child.stdout, /"released"/);
    const lock = await redlock(watched.url).acquire(resource, 10_000);
    await lock.release();
    await seen;
    const events = out
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; resource: string; nodes: number });
    expect(events.filter((e) => e.resource === resource).map((e) => e.event)).toEqual(['acquired', 'released']);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
