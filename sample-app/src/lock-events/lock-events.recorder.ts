import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { RedlockEventName } from '@redlock-nest/core';
import { RedlockService } from '@redlock-nest/nestjs';

/** One lock event as the app shows it: what happened to which resources, and how long it took. */
export interface LockEventRecord {
  readonly at: string;
  readonly event: RedlockEventName;
  readonly resources: readonly string[];
  /** The interesting number of the event: attempts, wait, hold or duration, reason. Never a token. */
  readonly detail: string;
}

const EVENTS: readonly RedlockEventName[] = ['acquire', 'wait', 'acquired', 'extend', 'lost', 'release', 'failure'];
/** How many recent events GET /locks/events shows. */
const KEEP = 100;

const ms = (value: number): string => `${value.toFixed(1)} ms`;

function detailOf(event: RedlockEventName, e: Record<string, unknown>): string {
  switch (event) {
    case 'acquire':
      return `ttl ${e.ttlMs as number} ms`;
    case 'wait':
      return `attempt ${e.attempt as number} found it held; waiting up to ${ms(e.delayMs as number)}`;
    case 'acquired':
      return `after ${e.attempts as number} attempt(s) in ${ms(e.durationMs as number)}${e.fencing ? ', fenced' : ''}`;
    case 'extend':
      return e.ok ? `extended in ${ms(e.durationMs as number)}` : `extension failed: ${e.error as string}`;
    case 'lost':
      return `lost (${e.reason as string}) after ${ms(e.heldMs as number)}`;
    case 'release':
      return `held ${ms(e.heldMs as number)}, released on ${e.released as number} node(s)`;
    case 'failure':
      return `${e.error as string} after ${e.attempts as number} attempt(s)`;
    case 'forceRelease':
      return `force-released on ${e.released as number} node(s): ${e.reason as string}`;
  }
}

/**
 * Keeps the last lock events of this instance (the core's typed events: no tokens in them) for
 * GET /locks/events, and logs them at debug level. What a team would wire to its metrics instead;
 * see docs/observability.md for the Prometheus recipe.
 */
@Injectable()
export class LockEventsRecorder implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('LockEvents');
  private readonly recent: LockEventRecord[] = [];
  private readonly unsubscribe: Array<() => void> = [];

  constructor(@Inject(RedlockService) private readonly locks: RedlockService) {}

  onModuleInit(): void {
    for (const event of EVENTS) {
      this.unsubscribe.push(this.locks.redlock.on(event, (payload) => this.record(event, payload as unknown as Record<string, unknown>)));
    }
  }

  onModuleDestroy(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** Oldest first. */
  events(): readonly LockEventRecord[] {
    return [...this.recent];
  }

  private record(event: RedlockEventName, payload: Record<string, unknown>): void {
    const entry: LockEventRecord = {
      at: new Date().toISOString(),
      event,
      resources: payload.resources as readonly string[],
      detail: detailOf(event, payload),
    };
    this.recent.push(entry);
    if (this.recent.length > KEEP) this.recent.shift();
    this.logger.debug(`${event} ${entry.resources.join(',')}: ${entry.detail}`);
  }
}
