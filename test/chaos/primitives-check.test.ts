/**
 * The chaos checker's read-write and semaphore invariants on made-up histories: a clean one
 * passes, and each violation (a reader valid while a writer is, two writers, too many permit
 * holders) is caught, while holders whose validity had ended do not count.
 */
import { describe, expect, it } from '@jest/globals';
import { checkHistory } from '../../chaos/src/checker.js';
import type { HoldEvent } from '../../chaos/src/primitive-history.js';

let cycle = 0;
function hold(primitive: HoldEvent['primitive'], worker: number, from: number, to: number, over: Partial<HoldEvent> = {}): HoldEvent {
  cycle++;
  return {
    type: 'hold',
    worker,
    cycle,
    resource: primitive === 'semaphore' ? 'sem-0' : 'rw-0',
    primitive,
    ...(primitive === 'semaphore' ? { permits: 2 } : {}),
    acquiredAt: from,
    validUntil: to + 1_000,
    releaseAt: to,
    lostSignal: false,
    ...over,
  };
}

describe('chaos checker: read-write locks and semaphores', () => {
  it('passes readers together, a writer alone, and at most N permit holders', () => {
    const report = checkHistory([
      hold('read', 0, 100, 200),
      hold('read', 1, 150, 250),
      hold('write', 2, 250, 300),
      hold('write', 3, 300, 350),
      hold('semaphore', 0, 100, 200),
      hold('semaphore', 1, 150, 250),
      hold('semaphore', 2, 200, 300),
    ]);
    expect(report.violations.readWriteOverlaps).toBe(0);
    expect(report.violations.permitOverflows).toBe(0);
    expect(report.primitives).toEqual({ reads: 2, writes: 2, permits: 3, maxPermitHolders: 2 });
    expect(report.passed).toBe(true);
  });

  it('catches a reader valid while a writer is, and two writers at once', () => {
    const report = checkHistory([hold('read', 0, 100, 200), hold('write', 1, 199, 300), hold('write', 2, 250, 260)]);
    expect(report.violations.readWriteOverlaps).toBe(2);
    expect(report.examples.join('\n')).toMatch(/valid at once/);
    expect(report.passed).toBe(false);
  });

  it('catches more permit holders at once than permits, but not a holder whose validity had ended', () => {
    const expired = hold('semaphore', 3, 100, 400, { validUntil: 140, lostSignal: true });
    const ok = checkHistory([expired, hold('semaphore', 0, 150, 200), hold('semaphore', 1, 160, 250)]);
    expect(ok.violations.permitOverflows).toBe(0);
    const bad = checkHistory([hold('semaphore', 0, 100, 200), hold('semaphore', 1, 150, 250), hold('semaphore', 2, 180, 300)]);
    expect(bad.violations.permitOverflows).toBe(1);
    expect(bad.examples.join('\n')).toMatch(/3 valid holders of sem-0 \(2 permits\)/);
  });
});
