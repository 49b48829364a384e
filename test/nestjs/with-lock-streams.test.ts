/**
 * @WithLock on methods whose result is consumed over time: an Observable holds the lock from
 * subscription until complete / error / unsubscribe, an async generator for its whole iteration
 * (currentLock() inside), and results that cannot be held for are refused with a typed error,
 * never consumed unlocked. The holding tests run for a lock, a read lock (`{ mode: 'read' }`) and
 * a `@WithSemaphore` permit. Against real redis-server processes, in plain calls and over a TCP
 * microservice.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Controller,
  Get,
  Injectable,
  Param,
  Sse,
  StreamableFile,
  type INestApplication,
  type INestMicroservice,
  type MessageEvent,
} from '@nestjs/common';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { LockNotAcquiredError, type Lock } from '@redlock-nest/core';
import { currentLock, LockedResultError, RedlockModule, RedlockService, WithLock, WithSemaphore } from '@redlock-nest/nestjs';
import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { Readable } from 'node:stream';
import { firstValueFrom, lastValueFrom, Observable, of, Subject, toArray } from 'rxjs';
import { freePort, RedisServer } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, rejection, unique, until as pollUntil, type Deferred } from './helpers.js';

/** What the bodies saw, for the assertions. */
const seen = {
  subscribedWith: [] as Array<Lock | undefined>,
  iteratedWith: [] as Array<Lock | undefined>,
  cleanupWith: [] as Array<Lock | undefined>,
  streamsDestroyed: 0,
  rpcGates: new Map<string, Deferred>(),
};

@Injectable()
class Feeds {
  /** Emits what `source` emits, inside the lock of `feed:<id>`. */
  @WithLock('feed:<id>', { wait: false })
  watch(id: string, source: Subject<string>): Observable<string> {
    return new Observable<string>((subscriber) => {
      seen.subscribedWith.push(currentLock());
      return source.subscribe(subscriber);
    });
  }

  /** A plain call on the same key: fails fast while a subscription holds it. */
  @WithLock('feed:<id>', { wait: false })
  async touch(id: string): Promise<string> {
    return `touched ${id}`;
  }

  @WithLock('feed:<id>', { onLocked: 'skip' })
  watchUnlessBusy(id: string): Observable<string> {
    return of('ran');
  }

  /** Yields `count` rows, each after `gate` (if any) resolves; records the lock it runs under. */
  @WithLock('export:<id>', { wait: false })
  async *rows(id: string, count: number, gate?: () => Promise<void>) {
    try {
      for (let i = 0; i < count; i++) {
        if (gate) await gate();
        seen.iteratedWith.push(currentLock());
        yield `${id}#${i}`;
      }
    } finally {
      seen.cleanupWith.push(currentLock());
    }
  }

  @WithLock('export:<id>', { wait: false })
  async exportTouch(id: string): Promise<string> {
    return `touched ${id}`;
  }

  /** Mistakes: results the lock cannot be held for. */
  @WithLock('bad:<id>')
  async nodeStream(id: string): Promise<Readable> {
    const stream = Readable.from(['a', 'b']);
    stream.once('close', () => seen.streamsDestroyed++);
    return stream;
  }

  // No declared return type: @WithLock cannot know at decoration time that this is an Observable.
  @WithLock('bad:<id>')
  undeclaredObservable(id: string) {
    return of(id);
  }

  @WithLock('bad:<id>')
  async observableInPromise(id: string): Promise<Observable<string>> {
    return of(id);
  }

  /** An async iterable from a method that is not an async generator: its iteration would run unlocked. */
  @WithLock('bad:<id>')
  iterate(id: string): AsyncIterable<string> {
    return Readable.from([id]).iterator({ destroyOnReturn: true });
  }

  @WithLock('bad:<id>')
  async file(id: string): Promise<StreamableFile> {
    const stream = Readable.from([id]);
    stream.once('close', () => seen.streamsDestroyed++);
    return new StreamableFile(stream);
  }

  @WithLock('bad:<id>', { wait: false })
  async badTouch(id: string): Promise<string> {
    return id;
  }
}

/** The same Observable and async-generator shapes as Feeds, held by a read lock or a semaphore permit. */
@Injectable()
class PrimitiveFeeds {
  @WithLock('rfeed:<id>', { mode: 'read', wait: false })
  watchRead(id: string, source: Subject<string>): Observable<string> {
    return new Observable<string>((subscriber) => {
      seen.subscribedWith.push(currentLock());
      return source.subscribe(subscriber);
    });
  }

  /** A writer: what a reader keeps out. */
  @WithLock('rfeed:<id>', { mode: 'write', wait: false })
  async touchRead(id: string): Promise<string> {
    return `touched ${id}`;
  }

  @WithLock('rexport:<id>', { mode: 'read', wait: false })
  async *rowsRead(id: string, count: number, gate?: () => Promise<void>) {
    for (let i = 0; i < count; i++) {
      if (gate) await gate();
      seen.iteratedWith.push(currentLock());
      yield `${id}#${i}`;
    }
  }

  @WithLock('rexport:<id>', { mode: 'write', wait: false })
  async exportTouchRead(id: string): Promise<string> {
    return `touched ${id}`;
  }

  @WithSemaphore('pfeed:<id>', { permits: 1, wait: false })
  watchPermit(id: string, source: Subject<string>): Observable<string> {
    return new Observable<string>((subscriber) => {
      seen.subscribedWith.push(currentLock());
      return source.subscribe(subscriber);
    });
  }

  @WithSemaphore('pfeed:<id>', { permits: 1, wait: false })
  async touchPermit(id: string): Promise<string> {
    return `touched ${id}`;
  }

  @WithSemaphore('pexport:<id>', { permits: 1, wait: false })
  async *rowsPermit(id: string, count: number, gate?: () => Promise<void>) {
    for (let i = 0; i < count; i++) {
      if (gate) await gate();
      seen.iteratedWith.push(currentLock());
      yield `${id}#${i}`;
    }
  }

  @WithSemaphore('pexport:<id>', { permits: 1, wait: false })
  async exportTouchPermit(id: string): Promise<string> {
    return `touched ${id}`;
  }
}

/** How a holding test reaches one primitive: its methods, and the Redis key a hold sets. */
interface Streamed {
  watch(id: string, source: Subject<string>): Observable<string>;
  touch(id: string): Promise<string>;
  rows(id: string, count: number, gate?: () => Promise<void>): AsyncGenerator<string>;
  exportTouch(id: string): Promise<string>;
  /** The resource of `watch` / `rows` for `id`. */
  feed(id: string): string;
  export(id: string): string;
  /** The key a hold of `resource` sets (a lock and a read lock: the lock key; a permit: its slot). */
  key(resource: string): string;
}

@Controller()
class FeedHandlers {
  /** A microservice handler streaming values while it holds the lock on the sku. */
  @MessagePattern('stock.watch')
  @WithLock('stock:<data.sku>', { wait: false })
  watch(@Payload() data: { sku: string }): Observable<number> {
    return new Observable<number>((subscriber) => {
      subscriber.next(1);
      void seen.rpcGates.get(data.sku)?.promise.then(() => {
        subscriber.next(2);
        subscriber.complete();
      });
    });
  }
}

@Controller('events')
class EventsController {
  /** Server-sent events while holding the lock on the channel; never completes by itself. */
  @Sse(':channel')
  @WithLock('sse:<channel>', { wait: false })
  stream(@Param('channel') channel: string): Observable<MessageEvent> {
    return new Observable<MessageEvent>((subscriber) => {
      subscriber.next({ data: { channel, locked: currentLock()?.resources } });
    });
  }

  @Get(':channel/touch')
  @WithLock('sse:<channel>', { wait: false })
  async touch(@Param('channel') channel: string) {
    return { channel };
  }
}

describe('@WithLock on Observable and async-iterable methods', () => {
  let redis: RedisServer;
  let direct: Redis;
  let app: INestApplication;
  let feeds: Feeds;
  let primitives: PrimitiveFeeds;
  let service: RedlockService;
  let micro: INestMicroservice;
  let client: ClientProxy;

  const held = async (key: string) => (await direct.exists(lockKey(key))) === 1;
  const heldKey = async (key: string) => (await direct.exists(key)) === 1;

  const STREAMED: Array<[string, () => Streamed]> = [
    [
      'a lock',
      () => ({
        watch: (id, source) => feeds.watch(id, source),
        touch: (id) => feeds.touch(id),
        rows: (id, count, gate) => feeds.rows(id, count, gate),
        exportTouch: (id) => feeds.exportTouch(id),
        feed: (id) => `feed:${id}`,
        export: (id) => `export:${id}`,
        key: lockKey,
      }),
    ],
    [
      "a read lock ({ mode: 'read' }; a writer is what it keeps out)",
      () => ({
        watch: (id, source) => primitives.watchRead(id, source),
        touch: (id) => primitives.touchRead(id),
        rows: (id, count, gate) => primitives.rowsRead(id, count, gate),
        exportTouch: (id) => primitives.exportTouchRead(id),
        feed: (id) => `rfeed:${id}`,
        export: (id) => `rexport:${id}`,
        key: lockKey, // readers mark the lock key
      }),
    ],
    [
      '@WithSemaphore ({ permits: 1 })',
      () => ({
        watch: (id, source) => primitives.watchPermit(id, source),
        touch: (id) => primitives.touchPermit(id),
        rows: (id, count, gate) => primitives.rowsPermit(id, count, gate),
        exportTouch: (id) => primitives.exportTouchPermit(id),
        feed: (id) => `pfeed:${id}`,
        export: (id) => `pexport:${id}`,
        key: (resource) => `redlock:semaphore:${resource}:0`,
      }),
    ],
  ];
  /** Resolves once the library released `resource` (its 'release' event: the keys are deleted). */
  const released = (resource: string) =>
    new Promise<void>((resolve) => {
      const off = service.redlock.on('release', (e) => {
        if (e.resources.includes(resource)) {
          off();
          resolve();
        }
      });
    });

  beforeAll(async () => {
    redis = await RedisServer.start();
    direct = directClient(redis.url);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [redis.url], isGlobal: true, ttl: 3_000 })],
      providers: [Feeds, PrimitiveFeeds],
      controllers: [FeedHandlers, EventsController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    feeds = app.get(Feeds);
    primitives = app.get(PrimitiveFeeds);
    service = app.get(RedlockService);
    const port = await freePort();
    micro = moduleRef.createNestMicroservice({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false, // the contended message's LockNotAcquiredError would be logged as an error
    });
    await micro.listen();
    client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await micro?.close();
    await app?.close();
    direct?.disconnect();
    await redis?.stop();
  });

  describe('an Observable-returning method', () => {
    it.each(STREAMED)('acquires on subscribe (not on call) and holds until complete: %s', async (_what, of) => {
      const p = of();
      const id = unique('obs');
      const resource = p.feed(id);
      const source = new Subject<string>();
      const feed = p.watch(id, source);
      expect(await heldKey(p.key(resource))).toBe(false); // lazy, like any Observable

      const values: string[] = [];
      const first = deferred();
      const done = deferred();
      feed.subscribe({
        next: (v) => {
          values.push(v);
          first.resolve();
        },
        complete: () => done.resolve(),
      });
      await until(() => source.observed);
      source.next('a');
      await first.promise;
      expect(seen.subscribedWith.at(-1)?.resources).toEqual([resource]); // the source ran inside the lock
      expect(await heldKey(p.key(resource))).toBe(true);
      expect(await rejection(p.touch(id))).toBeInstanceOf(LockNotAcquiredError);

      source.next('b');
      source.complete();
      await done.promise;
      // Released before the subscriber heard of the completion.
      expect(await heldKey(p.key(resource))).toBe(false);
      expect(values).toEqual(['a', 'b']);
      expect(await p.touch(id)).toBe(`touched ${id}`);
    });

    it('a second subscription to a held feed is refused', async () => {
      const id = unique('obs-twice');
      const source = new Subject<string>();
      const subscription = feeds.watch(id, source).subscribe();
      await until(() => source.observed);
      expect(await rejection(lastValueFrom(feeds.watch(id, new Subject())))).toBeInstanceOf(LockNotAcquiredError);
      const release = released(`feed:${id}`);
      subscription.unsubscribe();
      await release;
    });

    it('releases when the source errors, and passes the error on after the release', async () => {
      const id = unique('obs-err');
      const source = new Subject<string>();
      const failure = rejection(lastValueFrom(feeds.watch(id, source)));
      await until(() => held(`feed:${id}`));
      source.error(new Error('upstream broke'));
      expect((await failure).message).toBe('upstream broke');
      expect(await held(`feed:${id}`)).toBe(false);
      expect(await feeds.touch(id)).toBe(`touched ${id}`);
    });

    it('releases when the subscriber unsubscribes (take(1)), and the source is unsubscribed', async () => {
      const id = unique('obs-unsub');
      const source = new Subject<string>();
      const release = released(`feed:${id}`);
      const firstValue = firstValueFrom(feeds.watch(id, source));
      await until(() => source.observed);
      source.next('only');
      expect(await firstValue).toBe('only');
      await release;
      expect(source.observed).toBe(false);
      expect(await held(`feed:${id}`)).toBe(false);
      expect(await feeds.touch(id)).toBe(`touched ${id}`);
    });

    it("onLocked: 'skip' completes without a value while the key is held elsewhere", async () => {
      const id = unique('obs-skip');
      const lock = await service.acquire(`feed:${id}`);
      expect(await lastValueFrom(feeds.watchUnlessBusy(id).pipe(toArray()))).toEqual([]);
      await lock.release();
      expect(await lastValueFrom(feeds.watchUnlessBusy(id))).toBe('ran');
    });

    it('a @MessagePattern handler streams under the lock; a second message on the key is refused until it completes', async () => {
      const sku = unique('sku');
      const gate = deferred();
      seen.rpcGates.set(sku, gate);
      const all = lastValueFrom(client.send<number>('stock.watch', { sku }).pipe(toArray()));
      await until(() => held(`stock:${sku}`));
      const busy = await rejection(lastValueFrom(client.send('stock.watch', { sku })));
      expect(busy).toMatchObject({ status: 'error' });
      gate.resolve();
      expect(await all).toEqual([1, 2]);
      expect(await held(`stock:${sku}`)).toBe(false); // released before the completion was sent
      seen.rpcGates.set(sku, { promise: Promise.resolve(), resolve: () => {} });
      expect(await lastValueFrom(client.send<number>('stock.watch', { sku }).pipe(toArray()))).toEqual([1, 2]);
    });
  });

  it('an @Sse() handler holds the lock while the client listens, and releases it when the client disconnects', async () => {
    const channel = unique('chan');
    const { port } = app.getHttpServer().address() as AddressInfo;
    const base = `http://127.0.0.1:${port}/events/${channel}`;
    let req!: ClientRequest;
    const firstEvent = await new Promise<string>((resolve, reject) => {
      req = get(base, (res: IncomingMessage) => {
        res.setEncoding('utf8');
        let text = '';
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.includes('\n\n') && text.includes('data:')) resolve(text);
        });
      });
      req.once('error', reject);
    });
    expect(firstEvent).toContain(`"locked":["sse:${channel}"]`);
    expect(await held(`sse:${channel}`)).toBe(true);
    const busy = await new Promise<number>((resolve) =>
      get(`${base}/touch`, (res) => {
        res.resume();
        resolve(res.statusCode!);
      }),
    );
    expect(busy).not.toBe(200); // contended: the handler did not run (its status mapping is the HTTP layer's)
    const release = released(`sse:${channel}`);
    req.destroy(); // the client goes away: Nest unsubscribes, the lock is released
    await release;
    expect(await held(`sse:${channel}`)).toBe(false);
  });

  describe('an async generator method', () => {
    it.each(STREAMED)('holds for the whole iteration, with currentLock() inside the body: %s', async (_what, of) => {
      const p = of();
      const id = unique('gen');
      const resource = p.export(id);
      const rows = p.rows(id, 3);
      expect(await heldKey(p.key(resource))).toBe(false); // nothing runs before the first next()
      const out: string[] = [];
      const before = seen.iteratedWith.length;
      for await (const row of rows) {
        out.push(row);
        expect(await heldKey(p.key(resource))).toBe(true);
        expect(await rejection(p.exportTouch(id))).toBeInstanceOf(LockNotAcquiredError);
      }
      expect(out).toEqual([`${id}#0`, `${id}#1`, `${id}#2`]);
      const locks = seen.iteratedWith.slice(before);
      expect(locks.map((l) => l?.resources)).toEqual([[resource], [resource], [resource]]);
      expect(new Set(locks).size).toBe(1); // one lock for the whole iteration
      expect(await heldKey(p.key(resource))).toBe(false);
      expect(await p.exportTouch(id)).toBe(`touched ${id}`);
    });

    it('currentLock() survives awaits inside the generator body', async () => {
      const id = unique('gen-await');
      const before = seen.iteratedWith.length;
      const rows: string[] = [];
      for await (const row of feeds.rows(id, 2, () => new Promise((r) => setImmediate(r)))) rows.push(row);
      expect(rows).toHaveLength(2);
      expect(seen.iteratedWith.slice(before).map((l) => l?.resources)).toEqual([[`export:${id}`], [`export:${id}`]]);
    });

    it("an early break releases the lock after running the generator's finally inside it", async () => {
      const id = unique('gen-break');
      const cleanupsBefore = seen.cleanupWith.length;
      for await (const row of feeds.rows(id, 100)) {
        expect(row).toBe(`${id}#0`);
        break;
      }
      expect(seen.cleanupWith.slice(cleanupsBefore).map((l) => l?.resources)).toEqual([[`export:${id}`]]);
      expect(await held(`export:${id}`)).toBe(false);
      expect(await feeds.exportTouch(id)).toBe(`touched ${id}`);
    });

    it('a contended iteration fails on its first next() without running the body', async () => {
      const id = unique('gen-busy');
      const lock = await service.acquire(`export:${id}`);
      const before = seen.iteratedWith.length;
      expect(await rejection(feeds.rows(id, 1).next())).toBeInstanceOf(LockNotAcquiredError);
      expect(seen.iteratedWith.length).toBe(before);
      await lock.release();
    });
  });

  describe('results the lock cannot be held for', () => {
    it('a Node stream is refused with a typed error naming the fix, destroyed, and the lock released', async () => {
      const id = unique('stream');
      const err = await rejection(feeds.nodeStream(id));
      expect(err).toBeInstanceOf(LockedResultError);
      expect(err.message).toContain('Feeds.nodeStream');
      expect(err.message).toContain('async *');
      await until(() => seen.streamsDestroyed > 0);
      expect(await held(`bad:${id}`)).toBe(false);
      expect(await feeds.badTouch(id)).toBe(id);
    });

    it('an Observable from a method not declared to return one is refused, never subscribed unlocked', async () => {
      const id = unique('undeclared');
      const call = feeds.undeclaredObservable(id) as unknown as Promise<unknown>;
      expect(call).toBeInstanceOf(Promise);
      const err = await rejection(call);
      expect(err).toBeInstanceOf(LockedResultError);
      expect(err.message).toContain('Observable<T>');
      expect(await held(`bad:${id}`)).toBe(false);

      const err2 = await rejection(feeds.observableInPromise(id));
      expect(err2).toBeInstanceOf(LockedResultError);
      expect(await feeds.badTouch(id)).toBe(id);
    });

    it('an async iterable from a method that is not an async generator, and a StreamableFile, are refused', async () => {
      const id = unique('iterable');
      const err = await rejection(feeds.iterate(id) as unknown as Promise<unknown>);
      expect(err).toBeInstanceOf(LockedResultError);
      expect(err.message).toContain('async *method()');
      const destroyed = seen.streamsDestroyed;
      const err2 = await rejection(feeds.file(id));
      expect(err2).toBeInstanceOf(LockedResultError);
      expect(err2.message).toContain('@LockRoute');
      await until(() => seen.streamsDestroyed > destroyed);
      expect(await held(`bad:${id}`)).toBe(false);
      expect(await feeds.badTouch(id)).toBe(id);
    });
  });
});

/** Waits for a state that has no event to await (a subscription reaching the source, a key). */
function until(predicate: () => boolean | Promise<boolean>): Promise<void> {
  return pollUntil(predicate, 'the expected state');
}
