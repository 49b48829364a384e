/**
 * Type-level test (checked by `npm run typecheck`, never run): `@WithLock` accepts only methods
 * whose declared result it can hold the lock for (a Promise, an Observable, an async iterable);
 * anything else is a compile-time error instead of a silent change of the return type at run time.
 * Each `@ts-expect-error` line fails the type-check if the decorator starts accepting it.
 */
import { applyDecorators, Injectable, Post } from '@nestjs/common';
import { WithLock, type WithLockDecorator } from '@redlock-nest/nestjs';
import { Observable, of } from 'rxjs';

@Injectable()
export class Accepted {
  @WithLock('order:<id>')
  async pay(id: string) {
    return id;
  }

  @WithLock('order:<id>')
  payLater(id: string): Promise<string> {
    return Promise.resolve(id);
  }

  @WithLock('stock:<sku>')
  watch(sku: string): Observable<number> {
    return of(sku.length);
  }

  @WithLock('export:<id>')
  async *rows(id: string) {
    yield id;
  }

  @WithLock('export:<id>')
  iterate(id: string): AsyncIterable<string> {
    return this.rows(id);
  }

  @Post(':id')
  @WithLock('order:<id>', { wait: false, redlock: 'payments' })
  async route(id: string): Promise<void> {}
}

@Injectable()
export class Refused {
  // @ts-expect-error a sync value: the lock would be released before the caller sees it
  @WithLock('order:<id>')
  pay(id: string): string {
    return id;
  }

  // @ts-expect-error void: a sync method
  @WithLock('cron:tick')
  tick(): void {}

  // @ts-expect-error a sync generator
  @WithLock('export:<id>')
  *rows(id: string) {
    yield id;
  }

  // @ts-expect-error a number is not lockable
  @WithLock('n:<id>')
  count(id: string) {
    return id.length;
  }
}

// Nest's applyDecorators takes untyped MethodDecorators: composing @WithLock there needs the cast
// (and gives up the return-type check for the methods the composed decorator is put on).
export const LockedPost = (path: string): MethodDecorator => applyDecorators(Post(path), WithLock(`route:${path}`) as MethodDecorator);
// @ts-expect-error without the cast, the typed decorator is not an untyped MethodDecorator
export const untyped: MethodDecorator = WithLock('x');
export const decorator: WithLockDecorator = WithLock('x');
