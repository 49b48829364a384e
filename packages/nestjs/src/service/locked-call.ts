import { from, isObservable, Observable, type Subscription } from 'rxjs';
import type { LockedCallOptions } from '../options/lock-call-options.js';
import { LockScope } from './lock-scope.js';
import type { LockServiceBase } from './lock-service.base.js';
import { isThenable, LockedResultError, refuseLazyResult, type LockedReturnKind } from './locked-result.js';

/** One call of a `@WithLock` method, as the wrapper sees it. */
export interface LockedCall {
  readonly options: LockedCallOptions;
  /** `@WithLock on Class.method`, for messages. */
  readonly where: string;
  /** The service and resources of this call; throws a typed error (no module, bad key value). */
  prepare(): { readonly service: LockServiceBase; readonly resources: string[] };
  /** Runs the original method. */
  invoke(): unknown;
}

/** What a `@WithLock` method locks with, fixed when it is decorated. */
export interface LockedMethodPlan {
  readonly options: LockedCallOptions;
  /** `@WithLock on Class.method`, for messages. */
  readonly where: string;
  /** The lock service for calls on `instance`; throws a typed error when no module bound it. */
  service(instance: unknown): LockServiceBase;
  /** The resources of a call with `args`; throws a typed error on a bad key value. */
  resources(args: readonly unknown[]): string[];
  /** The decorated method itself. */
  readonly method: (...args: unknown[]) => unknown;
}

/**
 * The body of a `@WithLock` wrapper: runs a call on `instance` with `args` under its lock, holding
 * it as long as its result of `kind` is being consumed. Made once per decorated method, so a call
 * allocates only what it must.
 */
export function lockedCaller(kind: LockedReturnKind, plan: LockedMethodPlan): (instance: unknown, args: unknown[]) => unknown {
  if (kind === 'promise') return promiseCaller(plan);
  const run = kind === 'observable' ? observeLocked : iterateLocked;
  return (instance, args) =>
    run({
      options: plan.options,
      where: plan.where,
      prepare: () => ({ service: plan.service(instance), resources: plan.resources(args) }),
      invoke: () => plan.method.apply(instance, args),
    });
}

/**
 * The lock is held until the result (or the promise of it) settles; lazy results are refused.
 * The common case, so it has no {@link LockedCall} object and no closures beyond the body's.
 */
function promiseCaller(plan: LockedMethodPlan): (instance: unknown, args: unknown[]) => Promise<unknown> {
  const { options, where, method } = plan;
  const refuse = (value: unknown): unknown => refuseLazyResult(value, where);
  // What a promise resolves to is checked too: an Observable inside a Promise is lazy work as well.
  const settle = (result: unknown): unknown => (isThenable(result) ? Promise.resolve(result).then(refuse) : refuse(result));
  return (instance, args) => {
    let service: LockServiceBase;
    let resources: string[];
    try {
      service = plan.service(instance);
      resources = plan.resources(args);
    } catch (err) {
      return Promise.reject(err);
    }
    return service.runLocked(resources, options, () => settle(method.apply(instance, args)), where);
  };
}

/**
 * Lazy like any Observable: each subscription acquires, calls the method inside the lock and
 * subscribes to its Observable there; the lock is released on complete, error or unsubscribe,
 * before the subscriber hears of the end. A lost lock unsubscribes the source at once and errors
 * with `LockLostError`. Skipped (`onLocked: 'skip'`) means completing without a value.
 */
function observeLocked(call: LockedCall): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    const unsubscribed = new AbortController();
    const run = async (): Promise<void> => {
      const { service, resources } = call.prepare();
      const scope = await LockScope.open(service, resources, call.options, call.where, unsubscribed.signal);
      if (!scope) return;
      let failure: { error: unknown } | undefined;
      let source: Subscription | undefined;
      let stopWatching = (): void => {};
      await new Promise<void>((done) => {
        const fail = (error: unknown): void => {
          failure ??= { error };
          done();
        };
        if (unsubscribed.signal.aborted) return done();
        const onUnsubscribe = (): void => done();
        unsubscribed.signal.addEventListener('abort', onUnsubscribe, { once: true });
        const stopLost = scope.onLost(fail);
        stopWatching = () => {
          unsubscribed.signal.removeEventListener('abort', onUnsubscribe);
          stopLost();
        };
        try {
          const result = scope.run(() => call.invoke());
          // A Promise (the declared type lied) is still held until it settles.
          const source$ = isObservable(result) ? result : isThenable(result) ? from(result) : undefined;
          if (!source$) {
            throw new LockedResultError(
              call.where,
              `${describe(result)} although its declared return type is Observable`,
              'Return an Observable.',
            );
          }
          source = scope.run(() => source$.subscribe({ next: (value) => subscriber.next(value), error: fail, complete: () => done() }));
        } catch (err) {
          fail(err);
        }
      });
      stopWatching();
      source?.unsubscribe();
      await scope.close();
      if (failure) throw failure.error;
    };
    run().then(
      () => subscriber.complete(),
      (err: unknown) => subscriber.error(err),
    );
    return () => unsubscribed.abort();
  });
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object'
    ? `an object (${(value as { constructor?: { name?: string } }).constructor?.name ?? 'Object'})`
    : `a ${typeof value}`;
}

/**
 * The lock is taken on the first `next()` (generators are lazy too) and held until the iteration
 * ends: the generator returns or throws, or the consumer stops early (`break`, `return()`), which
 * runs the generator's `finally` blocks inside the lock before releasing. Every resume happens in
 * the lock context (`currentLock()` works in the body) and never on a lost lock.
 */
async function* iterateLocked(call: LockedCall): AsyncGenerator<unknown, unknown, unknown> {
  const { service, resources } = call.prepare();
  const scope = await LockScope.open(service, resources, call.options, call.where);
  if (!scope) return undefined;
  let iterator: AsyncGenerator<unknown, unknown, unknown> | undefined;
  /** The generator is suspended (not finished): stopping early must run its `finally` blocks. */
  let suspended = false;
  let failed = false;
  try {
    iterator = scope.run(() => call.invoke() as AsyncGenerator<unknown, unknown, unknown>);
    suspended = true;
    let resume: { readonly throws: boolean; readonly value: unknown } = { throws: false, value: undefined };
    for (;;) {
      const it = iterator;
      // Throws synchronously (the generator stays suspended) when the lock was lost meanwhile.
      const resumed = scope.run(() => (resume.throws ? it.throw(resume.value) : it.next(resume.value)));
      let step: IteratorResult<unknown, unknown>;
      try {
        step = await resumed;
      } catch (err) {
        suspended = false; // the generator threw: it is finished
        throw err;
      }
      if (step.done) {
        suspended = false;
        return step.value;
      }
      try {
        resume = { throws: false, value: yield step.value };
      } catch (err) {
        resume = { throws: true, value: err };
      }
    }
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    try {
      if (suspended && iterator) {
        const it = iterator;
        await scope.runCleanup(() => it.return(undefined));
      }
    } finally {
      if (failed) await closeQuietly(scope);
      else await scope.close();
    }
  }
}

/** Releases after a failure whose own error is what the consumer must see. */
async function closeQuietly(scope: LockScope): Promise<void> {
  try {
    await scope.close();
  } catch {
    // The original failure is reported; a lost lock at the same moment adds nothing the consumer can act on.
  }
}
