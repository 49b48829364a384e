import type { RedisCluster } from '../../test/harness/redis-server.js';
import type { FaultEvent } from './history.js';
import type { PlannedFault } from './schedule.js';
import type { WorkerHandle } from './worker-pool.js';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Injects the planned faults one at a time and heals each before the next, logging
 * every fault with the times it was in effect. Node faults use the test harness
 * (SIGKILL, SIGSTOP/SIGCONT, restart on the same port with its AOF); worker freezes
 * use SIGSTOP/SIGCONT on the worker or ask it for a busy loop inside its critical section.
 */
export class Nemesis {
  readonly log: FaultEvent[] = [];

  constructor(
    private readonly cluster: RedisCluster,
    private readonly workers: readonly WorkerHandle[],
  ) {}

  /** Runs `plan` (times relative to `t0`, a `performance.now()` value) until done or `signal` aborts. */
  async run(plan: readonly PlannedFault[], t0: number, signal: AbortSignal): Promise<void> {
    for (const fault of plan) {
      await sleep(t0 + fault.atMs - performance.now(), signal);
      if (signal.aborted) return;
      await this.inject(fault, signal);
    }
  }

  private async inject(f: PlannedFault, signal: AbortSignal): Promise<void> {
    const isNodeFault = f.kind !== 'sigstop-worker' && f.kind !== 'busy-worker';
    const servers = isNodeFault ? f.targets.map((i) => this.cluster.server(i)) : [];
    let start: number;
    switch (f.kind) {
      case 'kill-minority':
      case 'kill-majority':
        await Promise.all(servers.map((s) => s.kill()));
        start = Date.now();
        await sleep(f.durationMs, signal);
        await Promise.all(servers.map((s) => s.restart()));
        break;
      case 'pause-minority':
      case 'pause-majority':
        start = Date.now();
        for (const s of servers) s.pause();
        await sleep(f.durationMs, signal);
        for (const s of servers) s.resume();
        break;
      case 'restart-node':
        start = Date.now();
        await Promise.all(servers.map((s) => s.restart()));
        break;
      case 'sigstop-worker': {
        const worker = this.workers[f.targets[0]!]!;
        start = Date.now();
        worker.signal('SIGSTOP');
        await sleep(f.durationMs, signal);
        worker.signal('SIGCONT');
        break;
      }
      case 'busy-worker':
        // The worker logs this fault itself, with the exact times of its busy loop.
        await this.workers[f.targets[0]!]!.busy(f.durationMs);
        return;
    }
    this.log.push({ type: 'fault', kind: f.kind, targets: f.targets, start, end: Date.now() });
  }
}
