import { checkNodeIndependence, type NodeReport } from './independence.js';
import type { LockNode } from '../nodes/lock-node.js';

/**
 * The once-per-instance independence check of `checkIndependence: true`: run before the first
 * lock operation, kept while it holds, asked again after a failure to ask (a misconfiguration
 * is final), and re-run when a node that was down at the check connects, so a node that comes
 * up as a replica (or as a second address of another node) fails every later operation
 * instead of going unnoticed.
 */
export class IndependenceWatch {
  private current: Promise<NodeReport[]> | undefined;
  private stopped = false;

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly timeoutMs: number,
  ) {}

  /** The stored check, started on first use. */
  check(): Promise<NodeReport[]> {
    if (this.current) return this.current;
    const check = checkNodeIndependence(this.nodes, this.timeoutMs).then(
      (reports) => {
        this.recheckWhenReachable(check, reports);
        return reports;
      },
      (err: unknown) => {
        // A failure to ask is retried on the next call; a misconfiguration is final.
        if (!(err instanceof Error && err.name === 'NodeIndependenceError') && this.current === check) {
          this.current = undefined;
        }
        throw err;
      },
    );
    this.current = check;
    return check;
  }

  /** No more re-checks (the Redlock is closing). */
  stop(): void {
    this.stopped = true;
  }

  private recheckWhenReachable(check: Promise<NodeReport[]>, reports: readonly NodeReport[]): void {
    // The first of the missing nodes to connect re-runs the check (for all nodes); the
    // others' callbacks then find a newer check in place and do nothing.
    const recheck = (): void => {
      if (this.stopped || this.current !== check) return;
      this.current = undefined;
      // Handled here; an operation that awaits the stored check sees the same outcome.
      this.check().catch(() => undefined);
    };
    // Event-driven only: a node that answers TCP but not INFO (paused) is not polled.
    reports.forEach((report, i) => {
      if (!report.reachable) this.nodes[i]!.onNextReady(recheck);
    });
  }
}
