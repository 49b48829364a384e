/**
 * A chaos worker process: its own Redlock (own connections to every lock node) and
 * its own store client; runs lock cycles on the hot resources (fenced) and the plain
 * ones (unfenced), in several loops at once (so the loops of one process hand locks to
 * each other locally), until told to stop, appending every cycle and every failed
 * acquisition to its history file.
 */
import { createWriteStream } from 'node:fs';
import { Redis } from 'ioredis';
import { Redlock, RedisFencedStore, type Lock, type LockEngine } from '@redlock-nest/core';
import { EtcdLocks } from '@redlock-nest/etcd';
import { seededRandom } from './config.js';
import { failOnProcessWarnings } from './process-warnings.js';
import { CriticalSection, type BusyFreeze } from './critical-section.js';
import { burst, waiterStorm } from './overload.js';
import type { CycleEvent, ErrorEvent, HistoryEvent } from './history.js';
import { primitiveLoop } from './primitive-loop.js';
import { WORKER_CONFIG_ENV, type FromWorker, type ToWorker, type WorkerConfig } from './worker-config.js';

const config = JSON.parse(process.env[WORKER_CONFIG_ENV] ?? 'null') as WorkerConfig | null;
if (!config || typeof process.send !== 'function') {
  console.error('chaos worker: start me from the chaos orchestrator (child_process.fork with an IPC channel).');
  process.exit(2);
}
const cfg: WorkerConfig = config;
const send = (m: FromWorker): void => {
  // After the orchestrator is gone there is nobody to tell.
  if (process.connected) process.send?.(m);
};
failOnProcessWarnings(`worker ${cfg.id}`, (message) => {
  console.error(message);
  send({ type: 'failed', message });
  process.exitCode = 1;
});

const history = createWriteStream(cfg.historyFile, { flags: 'a' });
const record = (e: HistoryEvent): void => {
  history.write(`${JSON.stringify(e)}\n`);
};

let warnings = 0;
// Node-down warnings are expected under the nemesis: counted, printed only on request.
const onWarning = (message: string): void => {
  warnings++;
  if (process.env.CHAOS_VERBOSE) console.error(`[worker ${cfg.id}] ${message}`);
};
/** The Redis engine (absent in an etcd run, whose engine is `EtcdLocks`). */
const redis = cfg.etcd
  ? undefined
  : new Redlock(cfg.cluster ? [{ cluster: [...cfg.lockUrls] }] : cfg.lockUrls, {
      nodeTimeoutMs: cfg.nodeTimeoutMs,
      // A grant on a cluster master counts once its replica has it (WAIT): it survives a failover.
      ...(cfg.cluster && cfg.replicaSync ? { replicaSync: { replicas: 1 } } : {}),
      // Short jittered retries: a hot resource changes hands every few ms.
      retry: { retries: Infinity, delayMs: 2, jitterMs: 8 },
      onWarning,
    });
// etcd waiters are woken by the deletion ahead of them: no retry timing to tune.
const redlock: LockEngine = redis ?? new EtcdLocks({ hosts: cfg.lockUrls, requestTimeoutMs: cfg.nodeTimeoutMs, onWarning });
// Acquisitions handed over by another loop of this worker (lock cohorting), for the report.
let handoffs = 0;
redlock.on('acquired', (e) => {
  if (e.handoff) handoffs++;
});
const storeClient = new Redis(cfg.storeUrl, { maxRetriesPerRequest: 1 });
const section = new CriticalSection(new RedisFencedStore(storeClient, { keyPrefix: 'chaos:' }), cfg.id);
const random = seededRandom(cfg.seed * 1_000 + cfg.id);

let stopping = false;
let pendingFreeze: BusyFreeze | undefined;
/** Cycle numbers of overload scenarios start far above the loop's, so (worker, cycle) stays unique. */
let scenarioCycles = 1_000_000_000;
process.on('message', (m: ToWorker) => {
  if (m.type === 'stop') stopping = true;
  if (m.type === 'busy') pendingFreeze = { ms: m.ms };
  if (m.type === 'storm' || m.type === 'burst') {
    const ctx = { redlock, section, ttlMs: cfg.ttlMs, record, errorEvent };
    const base = scenarioCycles;
    scenarioCycles += m.size;
    const run = m.type === 'storm' ? waiterStorm(ctx, m.resource, m.size, base) : burst(ctx, m.resource, m.size);
    run.then(
      (result) => send({ type: 'scenario-done', result }),
      (err: unknown) => send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  }
});
// The orchestrator's death must not leave a worker spinning.
process.on('disconnect', () => {
  stopping = true;
});

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorEvent(resource: string, err: unknown, callAt: number): ErrorEvent {
  return {
    type: 'error',
    worker: cfg.id,
    resource,
    error: err instanceof Error ? err.name : typeof err,
    callAt,
    at: Date.now(),
  };
}

/**
 * How long a plain acquire/release cycle holds: about the fenced section's two store
 * round trips, so its belief interval is not empty and an overlap could show.
 */
const PLAIN_HOLD_MS = 2;

/** One lock cycle; returns false when the acquisition failed. */
async function cycle(n: number): Promise<boolean> {
  // A plain (unfenced, single-resource) acquire takes the SET NX path, a fenced one the Lua script.
  const pick = random();
  const plain = cfg.plainResources.length > 0 && pick < cfg.plainShare;
  const fair = !plain && cfg.fairResources.length > 0 && pick < cfg.plainShare + cfg.fairShare;
  const pool = plain ? cfg.plainResources : fair ? cfg.fairResources : cfg.resources;
  const resource = pool[Math.floor(random() * pool.length)]!;
  const watchdog = cfg.watchdogEvery > 0 && n % cfg.watchdogEvery === 0;
  const base = { cycle: n, resource, watchdog };
  const callAt = Date.now();
  const options = plain ? { timeoutMs: cfg.acquireTimeoutMs } : { fencing: true, fair, timeoutMs: cfg.acquireTimeoutMs };
  // A watchdog cycle holds for half the TTL: past the first extension at TTL/3.
  const holdMs = watchdog ? cfg.ttlMs / 2 : 0;

  const body = async (lock: Lock): Promise<CycleEvent> => {
    const acquiredAt = Date.now();
    // A hand-off's lock has no acquire round behind it (no node answers): see CycleEvent.handoff.
    if (plain) {
      const event = await section.runPlain(lock, { ...base, callAt }, acquiredAt, Math.max(holdMs, PLAIN_HOLD_MS));
      return lock.acquireNodes.length === 0 ? { ...event, handoff: true } : event;
    }
    // A busy freeze waits for a fenced cycle: its point is a stale write that fencing must refuse.
    const freeze = pendingFreeze;
    pendingFreeze = undefined;
    const { cycle: event, fault } = await section.run(lock, { ...base, callAt }, acquiredAt, holdMs, freeze);
    if (fault) {
      record(fault);
      send({ type: 'busy-done' });
    }
    // @internal of the core: the queue ticket, for the checker's queue-order invariant.
    const handed = lock.acquireNodes.length === 0 ? { ...event, handoff: true } : event;
    // Fair cycles run on Redis only (an etcd run has no fair resources: every etcd queue is FIFO).
    return fair ? { ...handed, fairTicket: redis?.fair.ticketOf(lock) ?? -1 } : handed;
  };

  try {
    let event: CycleEvent | undefined;
    if (watchdog) {
      await redlock
        .using(
          resource,
          cfg.ttlMs,
          async (lock) => {
            event = await body(lock);
          },
          options,
        )
        // A lost lock (e.g. extensions failed while a majority was down) is in the record.
        .catch((err: unknown) => {
          if (!event) throw err;
        });
    } else {
      const lock = await redlock.acquire(resource, cfg.ttlMs, options);
      try {
        event = await body(lock);
      } finally {
        await lock.release();
      }
    }
    if (event) record(event);
    return true;
  } catch (err) {
    record(errorEvent(resource, err, callAt));
    return false;
  }
}

async function main(): Promise<void> {
  await redis?.connect();
  await storeClient.ping();
  send({ type: 'ready' });
  // Read-write lock and semaphore holds, alongside (own random stream, same Redlock).
  const random2 = seededRandom(cfg.seed * 1_000 + cfg.id + 500);
  const ctx = {
    redlock,
    worker: cfg.id,
    ttlMs: cfg.ttlMs,
    acquireTimeoutMs: cfg.acquireTimeoutMs,
    permits: cfg.permits,
    random: random2,
    record,
    stopping: () => stopping,
  };
  const holds = primitiveLoop(ctx);
  // Cycle numbers are shared by the loops, so (worker, cycle) stays unique.
  let n = 0;
  const loop = async (): Promise<void> => {
    while (!stopping) {
      const ok = await cycle(++n);
      // While the quorum is gone, errors come back at once: back off a little, with jitter.
      if (!ok) await delay(20 + random() * 20);
    }
  };
  // Several loops on one Redlock want the same resources: their releases hand off locally (cohorting).
  await Promise.all(Array.from({ length: Math.max(1, cfg.loopsPerWorker) }, () => loop()));
  await holds;
  await redlock.close();
  await storeClient.quit();
  await new Promise<void>((resolve) => history.end(resolve));
  send({ type: 'done', cycles: n, warnings, handoffs });
}

const disconnect = (): void => {
  if (process.connected) process.disconnect();
};
main().then(disconnect, (err: unknown) => {
  send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exitCode = 1;
  disconnect();
});
