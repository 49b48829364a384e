import { Inject, Injectable } from '@nestjs/common';
import { setImmediate as yieldOnce, setTimeout as sleep } from 'node:timers/promises';
import { AppConfig } from '../app/app-config.js';

/**
 * Stands in for the card gateway's authorization call: a network round trip that
 * reserves the amount but moves no money (the capture, the fenced write, does).
 * Its latency is the window in which unlocked concurrent requests all see "open".
 */
@Injectable()
export class CardAuthorizer {
  constructor(@Inject(AppConfig) private readonly config: AppConfig) {}

  /** Resolves once the amount is authorized; rejects if `signal` aborts first (the lock was lost). */
  async authorize(amountCents: number, signal?: AbortSignal): Promise<{ amountCents: number }> {
    const ms = this.config.paymentAuthMs;
    if (ms > 0) await sleep(ms, undefined, signal ? { signal } : undefined);
    else await yieldOnce();
    return { amountCents };
  }
}
