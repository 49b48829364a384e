/**
 * What an outage looks like in the logs: one line per node state change (down, with the real
 * cause; back up), one line per failed job, and errors that name the cause (`ECONNREFUSED
 * 127.0.0.1:6390`, `ENOTFOUND redis-a.invalid`), never ioredis' internals ("Stream isn't writeable
 * and enableOfflineQueue options is false", "Connection is closed.").
 */
import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ConsoleLogger, Injectable, type INestApplication } from '@nestjs/common';
import { Interval, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { QuorumUnavailableError, Redlock } from '@redlock-nest/core';
import { RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { inspect } from 'node:util';
import { RedisCluster } from '../harness/redis-server.js';
import { rejection, uniqueResource, until } from '../harness/test-utils.js';

const IOREDIS_INTERNALS = /Stream isn't writeable|enableOfflineQueue|Connection is closed/;
/** A killed server refuses the reconnect, or resets a connection that had a command in flight. */
const SOCKET_CAUSE = '(?:ECONNREFUSED|ECONNRESET)';

describe('core: a node outage in onWarning and in errors', () => {
  let cluster: RedisCluster;
  const redlocks: Redlock[] = [];
  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((r) => r.close()));
    await cluster.stop();
  });

  async function start(): Promise<{ redlock: Redlock; lines: string[] }> {
    cluster = await RedisCluster.start(3);
    const lines: string[] = [];
    const redlock = new Redlock(cluster.urls, { onWarning: (m) => lines.push(m) });
    redlocks.push(redlock);
    await redlock.connect();
    return { redlock, lines };
  }

  it('writes one line when a node goes down (with the real cause) and one when it is back, however many reconnects fail', async () => {
    const { redlock, lines } = await start();
    const port = cluster.server(0).port;
    const about = (): string[] => lines.filter((l) => l.includes(`127.0.0.1:${port}`));
    let failedReconnects = 0;
    (redlock.nodes[0]!.client as unknown as { on(e: string, f: () => void): void }).on('error', () => failedReconnects++);

    await cluster.server(0).kill();
    // Locks keep working on the other two while the dead node's reconnects keep failing.
    for (let i = 0; i < 5; i++) await (await redlock.acquire(uniqueResource('outage'), 5_000)).release();
    await until(() => failedReconnects >= 3, 'three failed reconnects');
    expect(about()).toHaveLength(1);
    expect(about()[0]).toMatch(
      new RegExp(
        `^lock node 127\\.0\\.0\\.1:${port} is down \\(${SOCKET_CAUSE} 127\\.0\\.0\\.1:${port}\\); it counts as failed until it reconnects\\.$`,
      ),
    );

    await cluster.server(0).restart();
    await until(() => about().length === 2, 'the back-up line');
    expect(about()[1]).toMatch(new RegExp(`^lock node 127\\.0\\.0\\.1:${port} is back up \\(down for \\d+(\\.\\d)? s\\)\\.$`));

    await cluster.server(0).kill(); // a second outage is a new state change
    await until(() => about().length === 3, 'the second down line');
    expect(about()[2]).toMatch(new RegExp(`is down \\(${SOCKET_CAUSE} `));
    expect(lines.join('\n')).not.toMatch(IOREDIS_INTERNALS);
  });

  it("QuorumUnavailableError names each dead node's cause, and prints as one line", async () => {
    const { redlock, lines } = await start();
    const [p0, p1] = [cluster.server(0).port, cluster.server(1).port];
    await Promise.all([cluster.server(0).kill(), cluster.server(1).kill()]);
    // Right after the kill (before any reconnect failed), the cause is not known yet: still no ioredis internals.
    const early = await rejection(redlock.acquire(uniqueResource('early'), 5_000));
    expect(early).toBeInstanceOf(QuorumUnavailableError);
    expect(early.message).not.toMatch(IOREDIS_INTERNALS);

    await until(() => lines.filter((l) => l.includes(' is down (')).length === 2, 'both down lines');
    const err = await rejection(redlock.acquire(uniqueResource('outage'), 5_000));
    expect(err).toBeInstanceOf(QuorumUnavailableError);
    expect(err.nodes[0].error).toMatch(new RegExp(`^${SOCKET_CAUSE} 127\\.0\\.0\\.1:${p0}$`));
    expect(err.nodes[1].error).toMatch(new RegExp(`^${SOCKET_CAUSE} 127\\.0\\.0\\.1:${p1}$`));
    expect(err.message).toMatch(new RegExp(`127\\.0\\.0\\.1:${p0}=error \\(${SOCKET_CAUSE} 127\\.0\\.0\\.1:${p0}\\)`));
    expect(err.message).not.toMatch(IOREDIS_INTERNALS);
    const printed = inspect(err);
    expect(printed).toBe(`QuorumUnavailableError: ${err.message}`);
    expect(printed).not.toContain('\n');
  });

  it('an unknown host is named: ENOTFOUND <host>', async () => {
    cluster = await RedisCluster.start(2);
    const lines: string[] = [];
    const redlock = new Redlock(['redis://redis-a.invalid:6379', ...cluster.urls], { onWarning: (m) => lines.push(m) });
    redlocks.push(redlock);
    await (await redlock.acquire(uniqueResource('dns'), 5_000)).release();
    await until(() => lines.length > 0, 'the down line');
    expect(lines).toEqual(['lock node redis-a.invalid:6379 is down (ENOTFOUND redis-a.invalid); it counts as failed until it reconnects.']);
    const reports = await redlock.checkIndependence();
    expect(reports[0]).toMatchObject({ reachable: false, error: 'ENOTFOUND redis-a.invalid' });
  });
});

/** How many times the job's lock failed (the body never runs without its lock). */
let jobFailures = 0;

@Injectable()
class ReconcileJob {
  @Interval('reconcile', 25)
  @WithLock('job:reconcile', { onLocked: 'skip' })
  async run(): Promise<void> {}
}

describe('Nest: an outage in the application log', () => {
  let cluster: RedisCluster;
  let app: INestApplication;
  /** Every record Nest's ConsoleLogger wrote, as written. */
  const records: string[] = [];
  const write = { out: process.stdout.write, err: process.stderr.write };

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    // Nest's own ConsoleLogger (no colours), capturing what it writes: the format users see.
    // Nest's records start with "[Nest] <pid>"; a stack trace is written as a record of its own.
    // Anything else (the test runner's output) passes through.
    const capture =
      (stream: NodeJS.WriteStream, original: typeof process.stdout.write) =>
      (chunk: unknown, ...rest: unknown[]): boolean => {
        const text = String(chunk);
        if (text.startsWith('[Nest]') || /^\s+at /m.test(text)) {
          records.push(text);
          return true;
        }
        return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      };
    process.stdout.write = capture(process.stdout, write.out);
    process.stderr.write = capture(process.stderr, write.err);
    const moduleRef = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), RedlockModule.forRoot({ nodes: cluster.urls })],
      providers: [ReconcileJob],
    }).compile();
    app = moduleRef.createNestApplication({ logger: new ConsoleLogger({ colors: false }) });
    app.get(RedlockService).redlock.on('failure', () => jobFailures++);
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    await cluster.stop();
  });

  it('logs one line per node state change and one line per failed job, with the real causes', async () => {
    const ports = [cluster.server(0).port, cluster.server(1).port];
    await Promise.all([cluster.server(0).kill(), cluster.server(1).kill()]);
    await until(() => jobFailures >= 5, 'five failed job runs');
    await Promise.all([cluster.server(0).restart(), cluster.server(1).restart()]);
    await until(() => records.filter((r) => r.includes(' is back up ')).length === 2, 'both back-up lines');
    app.get(SchedulerRegistry).deleteInterval('reconcile');
    const jobLines = (): string[] => records.filter((r) => r.includes('QuorumUnavailableError'));
    // A run that failed just before the interval was deleted logs a moment after its failure event.
    await until(() => jobLines().length === jobFailures, 'one record per failed run');
    // Every failed run is one record of one line (a 35-line stack and field dump before), and no stack record follows.
    for (const line of jobLines()) expect(line.trimEnd().split('\n')).toHaveLength(1);
    expect(records.filter((r) => /^\s+at /m.test(r))).toEqual([]);
    expect(jobLines()[0]).toMatch(
      /ERROR \[Scheduler\] QuorumUnavailableError: Could not reach a quorum of 2\/3 Redis nodes for \["job:reconcile"\]/,
    );
    for (const port of ports) {
      const about = records.filter((r) => r.includes(`[Redlock] lock node 127.0.0.1:${port} `));
      expect(about).toHaveLength(2);
      expect(about[0]).toMatch(new RegExp(`is down \\(${SOCKET_CAUSE} 127\\.0\\.0\\.1:${port}\\)`));
      expect(about[1]).toContain('is back up');
    }
    expect(records.join('')).not.toMatch(IOREDIS_INTERNALS);
  });
});
