/**
 * @WithLock Observables and async generators, with the testing module (no Redis): they reuse a
 * lock their call chain already holds, and they are never resumed on a lock that was lost or
 * released (the source is unsubscribed, the generator not resumed, LockLostError).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockLostError, type Lock } from '@redlock-nest/core';
import { currentLock, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import { Observable, Subject } from 'rxjs';
import { rejection, until } from './helpers.js';

@Injectable()
class Watcher {
  @WithLock('watch:<id>')
  watch(id: string, source: Subject<number>): Observable<number> {
    return source.asObservable();
  }

  @WithLock('rows:<id>')
  async *rows(id: string) {
    for (let i = 0; ; i++) yield { i, lock: currentLock() };
  }

  @WithLock('slow:<id>', { wait: 60_000 })
  slow(id: string): Observable<string> {
    return new Observable<string>((subscriber) => subscriber.next(id));
  }

  leaked?: AsyncGenerator<{ i: number; lock: Lock | undefined }>;

  /** Starts an iteration inside its lock and keeps it (returning it would be refused): the rest would run after the release. */
  @WithLock('rows:<id>')
  async leak(id: string) {
    this.leaked = this.rows(id);
    await this.leaked.next();
  }
}

describe('Observables and generators: reentrancy and lost locks (testing module, no Redis)', () => {
  let app: INestApplication;
  let locks: RedlockTestingService;
  let watcher: Watcher;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [RedlockTestingModule.forRoot()], providers: [Watcher] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    locks = app.get(RedlockTestingService);
    watcher = app.get(Watcher);
  });
  afterAll(() => app?.close());

  it('unsubscribes the source at once and errors with LockLostError', async () => {
    const source = new Subject<number>();
    const values: number[] = [];
    const ended = new Promise<unknown>((resolve) =>
      watcher.watch('1', source).subscribe({ next: (v) => values.push(v), error: resolve, complete: () => resolve('completed') }),
    );
    await until(() => source.observed, 'the source is subscribed inside the lock');
    source.next(1);
    locks.loseLock('watch:1');
    expect(await ended).toBeInstanceOf(LockLostError);
    expect(source.observed).toBe(false);
    source.next(2); // nobody listens any more
    expect(values).toEqual([1]);
  });

  it('reuses the lock its call chain already holds (reentrant), for an Observable and a generator', async () => {
    const source = new Subject<number>();
    const inner = new Promise<number[]>((resolve, reject) => {
      locks
        .using(['watch:r', 'rows:r'], undefined, async () => {
          const values: number[] = [];
          const done = new Promise<void>((ok, fail) =>
            watcher.watch('r', source).subscribe({ next: (v) => values.push(v), complete: ok, error: fail }),
          );
          const rows = watcher.rows('r');
          const first = await rows.next();
          expect(first.value?.lock?.resources).toEqual(['watch:r', 'rows:r']); // the outer lock, not a second one
          await rows.return(undefined);
          source.next(7);
          source.complete();
          await done;
          return values;
        })
        .then(resolve, reject);
    });
    // The testing module fails at once on a second acquisition of a held key: reaching here means none happened.
    expect(await inner).toEqual([7]);
    expect(locks.isLocked('watch:r')).toBe(false);
  });

  it('an iteration that outlives the outer lock it reused is not resumed (LockLostError, released)', async () => {
    await watcher.leak('leak');
    expect(locks.isLocked('rows:leak')).toBe(false); // the outer call ended and released
    const err = await rejection(watcher.leaked!.next());
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('released');
  });

  it('an unsubscribe while waiting for the lock stops the wait (nothing is acquired or run later)', async () => {
    const other = locks.holdElsewhere('slow:1');
    const waiting = new Promise<void>((resolve) => locks.redlock.once('wait', () => resolve()));
    const gaveUp = new Promise<void>((resolve) => locks.redlock.once('failure', () => resolve()));
    const values: string[] = [];
    const subscription = watcher.slow('1').subscribe((v) => values.push(v));
    await waiting;
    subscription.unsubscribe();
    await gaveUp; // the acquisition was aborted, not left waiting for the release
    expect(values).toEqual([]);
    other.release();
    expect(locks.isLocked('slow:1')).toBe(false);
    expect(values).toEqual([]);
  });

  it('never resumes the generator on a lost lock: the next next() rejects with LockLostError', async () => {
    const rows = watcher.rows('2');
    expect((await rows.next()).value?.i).toBe(0);
    locks.loseLock('rows:2');
    expect(await rejection(rows.next())).toBeInstanceOf(LockLostError);
    expect(await rows.next()).toEqual({ done: true, value: undefined });
    expect(locks.isLocked('rows:2')).toBe(false);
  });
});
