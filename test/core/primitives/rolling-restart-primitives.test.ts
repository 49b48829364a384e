/**
 * A rolling restart under load, for every primitive: while workers of two Redlocks (two
 * processes' worth of connections) take a resource over and over, each node in turn is
 * killed and restarted EMPTY (no persistence), with the restart rule on (the default): the
 * next node goes down once the previous one counts again. Readers never overlap a writer,
 * never more than N permits are held, and no two fair holders overlap. Real redis-server processes.
 *
 * A section counts while its lock is valid: until it ends, until its lock is lost (the signal
 * aborts), or until the lock's validity ends (`lock.expiration`), whichever comes first. The
 * last bound is not a timer: a process that sleeps (CPU starved) across its validity's end can
 * wake up to a poll phase that hands another worker the key that expired on the server before
 * its own expiry timer aborts the signal. That is the lease Redlock is (a holder must not act
 * past its validity; fencing catches one that does), not two valid holders.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, QuorumUnavailableError, Redlock, type AcquireOptions, type RedlockOptions } from '@redlock-nest/core';
import { RedisCluster } from '../../harness/redis-server.js';
import { reachable, uniqueResource, until } from '../../harness/test-utils.js';

const TTL = 1_000;
/** Long enough that a second holder would overlap the first one if a restarted node let it in. */
const SECTION_MS = 300;

/** One critical section while its lock was valid, in this process' monotonic ms; `exclusive` for writers and fair holders. */
interface Section {
  readonly start: number;
  readonly end: number;
  readonly exclusive: boolean;
  /** Which Redlock, which keys, what each node answered and what happened to the nodes then: printed when the check fails. */
  readonly how: string;
}

/** One line per section for a failure's message. */
function described(s: Section): string {
  return `${s.start.toFixed(1)}-${s.end.toFixed(1)} ms: ${s.how}`;
}

/** Each moment more than `most` sections were valid at once, as those sections (a start at another's end is no overlap). */
function crowds(sections: readonly Section[], most: number): string[][] {
  const found: string[][] = [];
  // The count only rises at a start: looking at every start finds every crowd.
  for (const s of sections) {
    const at = sections.filter((o) => o.start <= s.start && s.start < o.end);
    if (at.length > most) found.push(at.map(described));
  }
  return found;
}

/** Each section that overlaps an exclusive one (a writer's, a fair holder's), beside it. */
function overlapsOfExclusive(sections: readonly Section[]): string[][] {
  const found: string[][] = [];
  for (const w of sections) {
    if (!w.exclusive) continue;
    for (const s of sections) if (s !== w && s.start < w.end && w.start < s.end) found.push([described(w), described(s)]);
  }
  return found;
}

type Worker = { readonly options: AcquireOptions; readonly exclusive: boolean };

const SHAPES: Array<[string, Worker[], (sections: readonly Section[]) => void]> = [
  [
    'read-write lock (4 readers, 2 writers)',
    [
      ...Array.from({ length: 4 }, () => ({ options: { mode: 'read' as const }, exclusive: false })),
      ...Array.from({ length: 2 }, () => ({ options: { mode: 'write' as const }, exclusive: true })),
    ],
    (sections) => expect(overlapsOfExclusive(sections)).toEqual([]),
  ],
  [
    'semaphore (2 permits, 5 workers)',
    Array.from({ length: 5 }, () => ({ options: { permits: 2 }, exclusive: false })),
    (sections) => expect(crowds(sections, 2)).toEqual([]),
  ],
  [
    'fair lock (4 workers)',
    Array.from({ length: 4 }, () => ({ options: { fair: true }, exclusive: true })),
    (sections) => expect(overlapsOfExclusive(sections)).toEqual([]),
  ],
];

describe('rolling restarts of empty nodes under load, restart rule on (3 nodes)', () => {
  let cluster: RedisCluster | undefined;
  const instances: Redlock[] = [];
  afterEach(async () => {
    for (const s of cluster?.servers ?? []) s.resume();
    await Promise.all(instances.splice(0).map((r) => r.close()));
    await cluster?.stop();
    cluster = undefined;
  });

  it.each(SHAPES)(
    '%s: the primitive holds through a restart of every node, one after the other',
    async (_what, workers, check) => {
      const c = await RedisCluster.start(3);
      cluster = c;
      const options: RedlockOptions = { onWarning: () => undefined, nodeTimeoutMs: 200 };
      const redlocks = [new Redlock(c.urls, options), new Redlock(c.urls, options)];
      instances.push(...redlocks);
      const resource = uniqueResource('rolling');
      const sections: Section[] = [];
      let stop = false;
      const unexpected: unknown[] = [];

      const work = async (redlock: Redlock, worker: Worker): Promise<void> => {
        while (!stop) {
          try {
            await redlock.using(
              resource,
              TTL,
              async (lock) => {
                const start = performance.now();
                let lostAt = Infinity;
                lock.signal.addEventListener('abort', () => (lostAt = performance.now()), { once: true });
                await new Promise((r) => setTimeout(r, SECTION_MS)); // the section's work
                const now = performance.now();
                const validUntil = now + (lock.expiration - Date.now());
                const nodes = lock.acquireNodes.map((n) => `${n.node} ${n.status}`).join(', ');
                const how = `redlock ${redlocks.indexOf(redlock)} ${lock.keys.join(' ')} [${nodes}] ${phase}`;
                sections.push({ start, end: Math.min(now, lostAt, validUntil), exclusive: worker.exclusive, how });
              },
              { ...worker.options, timeoutMs: 3_000 },
            );
          } catch (err) {
            // Contention, and no quorum while a restarted node sits out: expected. Anything else is not.
            if (!(err instanceof LockNotAcquiredError) && !(err instanceof QuorumUnavailableError) && !lostLock(err)) unexpected.push(err);
          }
        }
      };
      let phase = 'all nodes up';
      const running = workers.map((w, i) => work(redlocks[i % redlocks.length]!, w));

      /** Waits until `more` sections ended after now. */
      const progress = async (more: number, what: string): Promise<void> => {
        const from = performance.now();
        await until(() => sections.filter((s) => s.start >= from).length >= more, what, 30_000);
      };
      try {
        await progress(5, 'the workers run');
        for (let k = 0; k < c.servers.length; k++) {
          phase = `node ${k} down or sitting out`;
          await c.server(k).kill();
          c.server(k).wipe();
          await c.server(k).restart();
          await Promise.all(redlocks.map((r) => reachable(r, k)));
          await progress(3, `sections go on while node ${k} sits out`);
          // The next node goes down once this one counts again (the rule's wait, then its fencing sync).
          await until(() => redlocks.every((r) => r.restarts?.excluded(r.nodes[k]!) === undefined), `node ${k} counts again`, 30_000);
          phase = `node ${k} counts again`;
        }
        await progress(5, 'the workers run after the last restart');
      } finally {
        stop = true;
        await Promise.all(running);
      }
      expect(unexpected).toEqual([]);
      check(sections);
    },
    120_000,
  );
});

/** A LockLostError from using(): the section above already stopped counting at the loss. */
function lostLock(err: unknown): boolean {
  return err instanceof Error && err.name === 'LockLostError';
}
