/**
 * The Prometheus recipe of docs/observability.md, run against real redis-servers: the page shows
 * exactly the code in prometheus-recipe.ts, and that code counts what happened.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { useFixture, rejection, uniqueResource } from '../core/helpers.js';
import { registerRedlockMetrics } from './prometheus-recipe.js';

const root = new URL('../../', import.meta.url);

/** Sum of a metric's samples whose name and labels match. */
async function sample(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metrics = await registry.getMetricsAsJSON();
  let total = 0;
  for (const metric of metrics) {
    for (const v of metric.values as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>) {
      if ((v.metricName ?? metric.name) !== name) continue;
      if (Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want)) total += v.value;
    }
  }
  return total;
}

describe('Prometheus recipe', () => {
  const fx = useFixture(3);

  it('is shown verbatim in docs/observability.md', () => {
    const recipe = readFileSync(new URL('test/ops/prometheus-recipe.ts', root), 'utf8');
    const page = readFileSync(new URL('docs/observability.md', root), 'utf8');
    expect(page).toContain('```ts title="redlock-metrics.ts"\n' + recipe + '```');
  });

  it('records acquisition latency, waits, contention and lost locks from the events', async () => {
    const registry = new Registry();
    const holder = fx.redlock({ onWarning: () => {} });
    const redlock = fx.redlock({ onWarning: () => {} });
    const stop = registerRedlockMetrics(redlock, registry);

    // Contended, then acquired: the holder lets go when the first wait is reported.
    const resource = uniqueResource('prom');
    const held = await holder.acquire(resource, 10_000);
    redlock.once('wait', () => void held.release());
    const lock = await redlock.acquire(resource, 5_000, { retry: { retries: 50, delayMs: 50, jitterMs: 20 } });
    // Lost: the keys vanish behind the holder's back, the next extension finds out.
    await fx.drop(resource, [0, 1, 2]);
    await rejection(lock.extend(5_000));
    await lock.release();
    // Gave up: held elsewhere, one attempt only.
    const busy = await holder.acquire(uniqueResource('prom-busy'), 10_000);
    expect(await redlock.tryAcquire(busy.resources[0]!, 1_000)).toBeNull();
    await busy.release();

    expect(await sample(registry, 'redlock_acquire_duration_seconds_count', { outcome: 'acquired' })).toBe(1);
    expect(await sample(registry, 'redlock_acquire_duration_seconds_count', { outcome: 'LockNotAcquiredError' })).toBe(1);
    expect(await sample(registry, 'redlock_acquire_duration_seconds_sum', { outcome: 'acquired' })).toBeGreaterThan(0);
    expect(await sample(registry, 'redlock_wait_seconds_count')).toBe(1);
    expect(await sample(registry, 'redlock_wait_seconds_sum')).toBeGreaterThan(0);
    expect(await sample(registry, 'redlock_contention_total')).toBeGreaterThanOrEqual(1);
    expect(await sample(registry, 'redlock_lost_total', { reason: 'not-owner' })).toBe(1);
    const text = await registry.metrics();
    expect(text).toContain('redlock_lost_total{reason="not-owner"} 1');

    stop();
    expect(redlock.listenerCount('acquired') + redlock.listenerCount('wait')).toBe(0);
  });
});
