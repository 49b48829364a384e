/** A held lock, whatever the library calls it. */
export interface Held {
  release(): Promise<unknown>;
  extend(ttlMs: number): Promise<unknown>;
}

/** One library under test, behind the same small interface. */
export interface Contender {
  readonly name: string;
  /** Acquires `resource`, waiting (at the library's default retry timing) while it is held. */
  acquire(resource: string, ttlMs: number): Promise<Held>;
  close(): Promise<void>;
  /** How waits ended (ours only), for BENCH_DEBUG=1. */
  waitStats?(): unknown;
}
