import { existsSync } from 'node:fs';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';

/** Never freeze longer than this, even if the demo that should open the gate died. */
const MAX_FREEZE_MS = 120_000;

/**
 * Demo-only fault injection (inert unless DEMO_FREEZE_ORDER and DEMO_FREEZE_GATE are set):
 * the first payment of that order stops the whole process, right before its capture,
 * until the gate file exists. It blocks the event loop like a stop-the-world GC pause,
 * so no timer runs: the lock watchdog cannot extend and the lock expires while this
 * process still believes it holds it. That is exactly the case only fencing catches.
 */
@Injectable()
export class DemoFreezeHook {
  private fired = false;

  constructor(@Inject(AppConfig) private readonly config: AppConfig) {}

  beforeCapture(orderId: number, token: bigint | undefined): void {
    const { freezeOrder, freezeGate } = this.config;
    if (this.fired || freezeOrder !== orderId || !freezeGate) return;
    this.fired = true;
    // Synchronous on pipes and files, so the demo sees this line before the freeze starts.
    process.stdout.write(`DEMO-FREEZE order=${orderId} token=${token ?? 'none'}\n`);
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const start = Date.now();
    // Atomics.wait blocks the thread without burning a core (the machine is shared).
    while (!existsSync(freezeGate) && Date.now() - start < MAX_FREEZE_MS) Atomics.wait(cell, 0, 0, 5);
    process.stdout.write(`DEMO-THAW order=${orderId} after ${Date.now() - start} ms\n`);
  }
}
