import type { LockedStatus } from '../options/redlock-options.js';

/** Options of `RedlockTestingModule.forRoot()`. */
export interface RedlockTestingOptions {
  /** Default lock TTL in ms for `@WithLock` / `@LockRoute`. Default: the real module's default. */
  readonly ttl?: number;
  /** Status of a contended `@LockRoute`: 409 (default) or 423. */
  readonly lockedStatus?: LockedStatus;
  /**
   * How long a contended acquisition waits for a release when the call does not say
   * (`wait` / `timeoutMs`). Default 0: fail at once, so a forgotten `holdElsewhere` never
   * turns into a slow test. Production's default is the retry policy (about 3 s).
   */
  readonly defaultWaitMs?: number;
  /**
   * Stands in for the `RedlockModule.forRoot({ name })` instance of that name (default: the
   * unnamed one). A named stand-in exports only its instance's token (`@InjectRedlock(name)`).
   */
  readonly name?: string;
  /**
   * How many in-memory lock nodes the core Redlock runs over (default 3: a quorum of 2, so one
   * node can be stopped, slowed or restarted through `RedlockTestingService.nodes`).
   */
  readonly nodes?: number;
}

/** Injection token of the testing options. */
export const REDLOCK_TESTING_OPTIONS = Symbol('redlock-nest:testing-options');

/** The single source of the testing module's own defaults. */
export const DEFAULT_REDLOCK_TESTING_OPTIONS = Object.freeze({ defaultWaitMs: 0, nodes: 3 });
