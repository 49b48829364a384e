import { Counter, Histogram, type Registry } from 'prom-client';
import type { LockEngine } from '@redlock-nest/core';

/** Prometheus metrics for one lock engine (a Redlock, EtcdLocks), fed by its events. Returns a function that stops them. */
export function registerRedlockMetrics(redlock: LockEngine, registry: Registry): () => void {
  const buckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];
  const acquireSeconds = new Histogram({
    name: 'redlock_acquire_duration_seconds',
    help: 'Time from the start of an acquisition to its end, waits included',
    labelNames: ['outcome'],
    buckets,
    registers: [registry],
  });
  const waitSeconds = new Histogram({
    name: 'redlock_wait_seconds',
    help: 'Time acquisitions spent waiting for a held lock',
    buckets,
    registers: [registry],
  });
  const contention = new Counter({
    name: 'redlock_contention_total',
    help: 'Attempts that found the lock held by someone else',
    registers: [registry],
  });
  const lost = new Counter({
    name: 'redlock_lost_total',
    help: 'Locks lost while held, by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
  const offs = [
    redlock.on('acquired', (e) => {
      acquireSeconds.observe({ outcome: 'acquired' }, e.durationMs / 1000);
      waitSeconds.observe(e.waitedMs / 1000);
    }),
    redlock.on('failure', (e) => acquireSeconds.observe({ outcome: e.error }, e.durationMs / 1000)),
    redlock.on('wait', () => contention.inc()),
    redlock.on('lost', (e) => lost.inc({ reason: e.reason })),
  ];
  return () => offs.forEach((off) => off());
}
