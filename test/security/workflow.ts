/**
 * Every kind of command the library sends to a lock node, in one short run: the
 * independence check (INFO), a fenced acquire, a waiter queued on the key's arbiter and woken
 * by its turn (ZADD, ZPOPMIN, SUBSCRIBE/PUBLISH), a waiter that gives up leaving the queue (ZREM),
 * an extension, a release, a cohort counting the
 * queue (ZCARD), a fence() of a held lock, and using() with a watchdog extension.
 * Returns what failed (empty when everything worked). Uses nodeTimeoutMs 300, so an
 * idle release-notice channel is unsubscribed after about 1 s.
 */
import { Redlock, type RedisNodeInput } from '@redlock-nest/core';

export async function lockWorkflow(
  nodes: ReadonlyArray<RedisNodeInput>,
  warnings: string[] = [],
  /** Stay open this long at the end, e.g. past the release-notice linger, so idle channels are unsubscribed. */
  lingerMs = 0,
  /** Appended to every resource name: workflows with different scopes run side by side without contending. */
  scope = '',
): Promise<string[]> {
  const failures: string[] = [];
  const resource = (name: string): string => (scope ? `${name}:${scope}` : name);
  const options = { nodeTimeoutMs: 300, onWarning: (m: string) => warnings.push(m) };
  const holder = new Redlock(nodes, { ...options, checkIndependence: true });
  const waiter = new Redlock(nodes, options);
  const step = async (name: string, fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      failures.push(`${name}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    }
  };
  try {
    await step('checkIndependence', () => holder.checkIndependence());
    await step('acquire, wait, extend, release', async () => {
      const lock = await holder.acquire(resource('workflow'), 5_000, { fencing: true });
      if (lock.fencingToken === undefined) throw new Error('no fencing token');
      // The waiter must really contend (PTTL in the script, then SUBSCRIBE for the notice).
      const contended = new Promise<void>((resolve) => waiter.once('wait', () => resolve()));
      const waiting = waiter.acquire(resource('workflow'), 5_000, {
        timeoutMs: 4_000,
        retry: { retries: Infinity, delayMs: 200, jitterMs: 0 },
      });
      await Promise.race([contended, waiting.then(() => undefined)]);
      await lock.extend(5_000);
      await lock.release();
      await (await waiting).release();
    });
    await step('a waiter that gives up leaves the queue', async () => {
      // Refused on the arbiter, a retrying waiter queues (ZADD); it gives up once its second attempt
      // was refused (by then it queued, whatever the load), and leaves the queue (ZREM).
      const lock = await holder.acquire(resource('workflow-leave'), 5_000);
      const giveUp = new AbortController();
      const reason = new Error('gave up');
      const off = waiter.on('wait', (e) => {
        if (e.attempt >= 2) giveUp.abort(reason);
      });
      const gaveUp = await waiter.acquire(resource('workflow-leave'), 5_000, { timeoutMs: 4_000, signal: giveUp.signal }).then(
        () => new Error('the waiter got a held lock'),
        (err: unknown) => err,
      );
      off();
      await lock.release();
      if (gaveUp !== reason) throw gaveUp;
    });
    await step('a cohort past its bounds asks whether other processes wait', async () => {
      // One hand-off allowed per run: the second release counts the key's queue (ZCARD) before handing off again.
      const local = new Redlock(nodes, { ...options, cohort: { maxHandoffs: 1, maxHoldMs: 60_000 } });
      try {
        const first = await local.acquire(resource('workflow-cohort'), 5_000);
        const second = local.acquire(resource('workflow-cohort'), 5_000, { timeoutMs: 4_000 });
        const third = local.acquire(resource('workflow-cohort'), 5_000, { timeoutMs: 4_000 });
        await first.release();
        await (await second).release();
        await (await third).release();
      } finally {
        await local.close();
      }
    });
    await step('fence a held lock', async () => {
      const lock = await holder.acquire(resource('workflow-fence'), 5_000);
      await lock.fence();
      if (lock.fencingToken === undefined) throw new Error('no fencing token after fence()');
      await lock.release();
    });
    await step('using with a watchdog extension', () =>
      holder.using(resource('workflow-using'), 150, () => new Promise((resolve) => setTimeout(resolve, 250)), { fencing: true }),
    );
    if (lingerMs > 0) await new Promise((resolve) => setTimeout(resolve, lingerMs));
  } finally {
    await Promise.all([holder.close(), waiter.close()]);
  }
  return failures;
}
