import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { RedlockService } from '@redlock-nest/nestjs';

/** How this instance got the lock of one counter: won on the nodes, or handed over locally. */
export interface CohortCounts {
  /** Acquisitions that ran a round on the lock nodes. */
  readonly fromNodes: number;
  /** Local hand-offs (lock cohorting): the previous holder in this process passed the lock on, no round ran. */
  readonly handoffs: number;
}

/** The lock resource of a counter. */
export const COUNTER_PREFIX = 'counter:';

/**
 * Counts, per counter, how this instance acquired its lock, from the core's `acquired` events
 * (`handoff: true` marks a local hand-off). That is what lock cohorting looks like from outside:
 * the lock goes from one request to the next inside the process while the keys stay on the nodes.
 */
@Injectable()
export class CohortStats implements OnModuleInit, OnModuleDestroy {
  private readonly counts = new Map<string, { fromNodes: number; handoffs: number }>();
  private off: (() => void) | undefined;

  constructor(@Inject(RedlockService) private readonly locks: RedlockService) {}

  onModuleInit(): void {
    this.off = this.locks.redlock.on('acquired', (e) => {
      const resource = e.resources[0];
      if (e.resources.length !== 1 || !resource?.startsWith(COUNTER_PREFIX)) return;
      const name = resource.slice(COUNTER_PREFIX.length);
      const c = this.counts.get(name) ?? { fromNodes: 0, handoffs: 0 };
      if (e.handoff) c.handoffs++;
      else c.fromNodes++;
      this.counts.set(name, c);
    });
  }

  onModuleDestroy(): void {
    this.off?.();
    this.off = undefined;
  }

  of(name: string): CohortCounts {
    return { ...(this.counts.get(name) ?? { fromNodes: 0, handoffs: 0 }) };
  }
}
