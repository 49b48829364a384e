/**
 * Waits for the restart rule's first looks at the nodes: a verdict that depends on what the
 * other nodes of the set are (is any of them known old?) must not be given while one of
 * them is still connecting or its first INFO is on the way, or a young node that answers
 * fast would count before the old node that shows it may have restarted is seen.
 *
 * Each wait ends as soon as its condition holds (re-tested on every event that can change
 * it: a check that ended, a connection that failed or ended), or after a bound, so a node
 * that never answers costs a verdict at most that long and never holds it forever.
 */
export class FirstLooks {
  private readonly waiting = new Set<() => void>();
  private closed = false;

  /**
   * Resolves once `settled()` is true, the rule is closed, or `boundMs` passed.
   *
   * @example
   * ```ts
   * await looks.wait(() => !othersPending(node), nodeTimeoutMs);
   * ```
   */
  wait(settled: () => boolean, boundMs: number): Promise<void> {
    if (this.closed || settled()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.waiting.delete(test);
        resolve();
      };
      const test = (): void => {
        if (this.closed || settled()) finish();
      };
      const timer = setTimeout(finish, boundMs);
      // The round that waits on this has its own timers and sockets; this one alone must not keep a process up.
      timer.unref();
      this.waiting.add(test);
    });
  }

  /** Something a waiting condition reads changed: test each again. */
  changed(): void {
    for (const test of [...this.waiting]) test();
  }

  /** Ends every wait (the Redlock is closing). */
  close(): void {
    this.closed = true;
    this.changed();
  }
}
