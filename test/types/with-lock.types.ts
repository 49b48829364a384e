/**
 * Type-level test (checked by `npm run typecheck`, never run): `@WithLock` accepts only methods
 * whose declared result it can hold the lock for (a Promise, an Observable, an async iterable);
 * anything else is a compile-time error instead of a silent change of the return type at run time.
 * Each `@ts-expect-error` line fails the type-check if the decorator starts accepting it.
 */
import { applyDecorators, Injectable, Post } from '@nestjs/common';
import { LockRoute, WithLock, WithSemaphore, type WithLockDecorator } from '@redlock-nest/nestjs';
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

// `permits` is @WithSemaphore's only: on @WithLock or @LockRoute it would silently make a semaphore
// (or, before this was refused, an option nobody reads). Each line fails the type-check if accepted.
@Injectable()
export class NotSemaphores {
  // @ts-expect-error permits belongs to @WithSemaphore
  @WithLock('export:<id>', { permits: 2 })
  async run(id: string): Promise<string> {
    return id;
  }

  @Post('export/:id')
  // @ts-expect-error permits belongs to @WithSemaphore
  @LockRoute('export:<id>', { permits: 2 })
  async route(id: string): Promise<string> {
    return id;
  }

  @WithSemaphore('export:<id>', { permits: 2 })
  async semaphore(id: string): Promise<string> {
    return id;
  }
}
