import { StreamableFile } from '@nestjs/common';
import { RedlockArgumentError } from '@redlock-nest/core';
import { isObservable, Observable } from 'rxjs';
import type { AnyMethod } from '../keys/method-wrapper.js';

/**
 * How a `@WithLock` method delivers its result, decided once at decoration time:
 * - `'iterable'`: an async generator function (`async *method()`); the lock is held for the iteration;
 * - `'observable'`: its declared return type is an `Observable` (TypeScript's `design:returntype`
 *   metadata); the lock is held from subscription until complete, error or unsubscribe;
 * - `'promise'`: anything else; the lock is held until the returned promise settles.
 */
export type LockedReturnKind = 'promise' | 'observable' | 'iterable';

/** The return kind of `method` (see {@link LockedReturnKind}). */
export function lockedReturnKind(method: AnyMethod, target: object, propertyKey: string | symbol): LockedReturnKind {
  if (method.constructor.name === 'AsyncGeneratorFunction') return 'iterable';
  const declared: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
  if (typeof declared === 'function' && (declared === Observable || declared.prototype instanceof Observable)) {
    return 'observable';
  }
  return 'promise';
}

/**
 * A `@WithLock` method returned something the lock cannot be held for: its work would happen after
 * the lock is released. The message names the fix. The result was not used (an Observable was not
 * subscribed, an iterable not iterated, a stream destroyed) and the lock was released.
 *
 * @example
 * ```ts
 * // Instead of returning a Node stream, yield its chunks: the lock is held for the whole iteration.
 * @WithLock('export:<id>')
 * async *export(id: string) {
 *   for await (const chunk of this.files.read(id)) yield chunk;
 * }
 * ```
 */
export class LockedResultError extends RedlockArgumentError {
  constructor(where: string, what: string, fix: string) {
    super(`${where} returned ${what}, which @WithLock cannot hold the lock for: it would be consumed after the release. ${fix}`);
  }
}

const OBSERVABLE_FIX =
  'Declare the method\'s return type as Observable<T> (with "emitDecoratorMetadata" on, TypeScript records it) and return ' +
  'the Observable itself, not inside a Promise: the lock is then held from subscription until complete, error or ' +
  'unsubscribe. The Observable was not subscribed.';
const ITERABLE_FIX =
  'Write the method as an async generator (async *method() { yield* source; }): the lock is then held for the whole ' +
  'iteration. It was not iterated.';
const STREAM_FIX =
  'Yield its chunks from an async generator method (async *method() { for await (const chunk of stream) yield chunk; }), ' +
  'return an Observable, or consume the stream inside the method. The stream was destroyed.';
const FILE_FIX =
  'Read the content inside the method, or lock the HTTP route with @LockRoute, which holds the lock until the response ' +
  'body is written. The stream was destroyed.';

function isStream(value: object): value is { destroy?: () => void } {
  const v = value as Record<string, unknown>;
  return typeof v['pipe'] === 'function' && typeof v['on'] === 'function';
}

/**
 * Returns `value` when the lock's release after it is safe, throws {@link LockedResultError}
 * (after cleaning the value up) when `value` is lazy work that would run unlocked.
 */
export function refuseLazyResult<T>(value: T, where: string): T {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
  if (isObservable(value)) throw new LockedResultError(where, 'an Observable', OBSERVABLE_FIX);
  if (value instanceof StreamableFile) {
    value.getStream().destroy();
    throw new LockedResultError(where, 'a StreamableFile', FILE_FIX);
  }
  if (isStream(value)) {
    value.destroy?.();
    throw new LockedResultError(where, 'a Node stream', STREAM_FIX);
  }
  if (typeof (value as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function') {
    // Let go of what it holds: a generator's finally blocks, a web ReadableStream's source.
    const v = value as { return?: (x?: unknown) => Promise<unknown>; cancel?: () => Promise<unknown> };
    const ended = typeof v.cancel === 'function' ? v.cancel() : v.return?.(undefined);
    void ended?.catch(() => undefined);
    throw new LockedResultError(where, 'an async iterable', ITERABLE_FIX);
  }
  return value;
}

/** A promise-like result: the lock is held until it settles, and what it resolves to is checked too. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
  );
}
