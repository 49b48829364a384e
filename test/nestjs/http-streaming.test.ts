/**
 * A streamed response holds its route's lock until the body has been fully written or the
 * client left: `StreamableFile`, a returned stream, a stream piped through `@Res()`, and `@Sse()`.
 * Each request that reached its handler is recorded as an interval, from the handler's start to
 * its response's 'close' (fully written, or the client gone); no two may overlap for one key.
 *
 * Request A's client reads nothing, so A's 32 MB body stays unwritten. Request B on the same key
 * waits up to 1 s for the lock meanwhile: it must answer 409, not produce a second body.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Headers, Res, Sse, StreamableFile, type INestApplication, type MessageEvent } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockRoute, RedlockModule } from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { Observable } from 'rxjs';
import request from 'supertest';
import { RedisCluster } from '../harness/redis-server.js';
import { deferred, directClient, IntervalLog, lockKey, unique, until } from './helpers.js';

const CHUNK = 'x'.repeat(64 * 1024);
/** 32 MB: far more than the socket buffers hold, so a client that reads nothing leaves it unwritten. */
const CHUNKS = 512;

const runs = new IntervalLog();
/** Ends the interval of a request (by its `x-req` label) when its response closes. */
const endings = new Map<string, () => void>();
const begin = (key: string, req: string) => endings.set(req, runs.begin(key, req));

function body(): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < CHUNKS; i++) yield CHUNK;
    })(),
  );
}

@Controller('streams')
class StreamsController {
  @Get('file/:id')
  @LockRoute('file:<id>', { wait: 1_000 })
  file(@Headers('x-req') req: string, @Headers('x-id') id: string) {
    begin(`file:${id}`, req);
    return new StreamableFile(body());
  }

  @Get('returned/:id')
  @LockRoute('returned:<id>', { wait: 1_000 })
  returned(@Headers('x-req') req: string, @Headers('x-id') id: string) {
    begin(`returned:${id}`, req);
    return body();
  }

  @Get('piped/:id')
  @LockRoute('piped:<id>', { wait: 1_000 })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an Express response or a Fastify reply, told apart below
  piped(@Headers('x-req') req: string, @Headers('x-id') id: string, @Res() res: any) {
    begin(`piped:${id}`, req);
    // Express: pipe into the response; Fastify: the reply pipes what it is sent.
    if ('raw' in res) res.send(body());
    else body().pipe(res);
  }

  @Sse('sse/:id', { maxPendingDataLength: 0 }) // keeps every event for the client that does not read
  @LockRoute('sse:<id>', { wait: 1_000 })
  sse(@Headers('x-req') req: string, @Headers('x-id') id: string): Observable<MessageEvent> {
    begin(`sse:${id}`, req);
    return new Observable<MessageEvent>((subscriber) => {
      for (let i = 0; i < CHUNKS; i++) subscriber.next({ data: CHUNK });
      subscriber.complete();
    });
  }
}

const adapters = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
] as const;

describe.each(adapters)('streamed responses (%s)', (name, makeAdapter) => {
  let cluster: RedisCluster;
  let app: INestApplication;
  let direct: Redis[];
  let base: string;

  const held = async (resource: string) =>
    (await Promise.all(direct.map((c) => c.exists(lockKey(resource))))).filter((n) => n === 1).length;

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: cluster.urls, ttl: 5_000 })],
      controllers: [StreamsController],
    }).compile();
    const adapter = makeAdapter();
    app = adapter ? moduleRef.createNestApplication(adapter as never) : moduleRef.createNestApplication();
    (app.getHttpServer() as Server).on('request', (req: IncomingMessage, res: ServerResponse) => {
      const label = String(req.headers['x-req']);
      res.once('close', () => endings.get(label)?.());
    });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    for (const c of direct ?? []) c.disconnect();
    await cluster?.stop();
  });

  /** Starts request A and returns once its response headers arrived; its body is not read until `read()`. */
  const startUnread = async (path: string, req: string, id: string) => {
    const responded = deferred<IncomingMessage>();
    const client = httpRequest(`${base}${path}`, { headers: { 'x-req': req, 'x-id': id } });
    client.on('error', () => undefined);
    client.on('response', (res) => {
      res.pause();
      responded.resolve(res);
    });
    client.end();
    const res = await responded.promise;
    return {
      status: res.statusCode,
      client,
      /** Reads the whole body; resolves with its length. */
      read: () =>
        new Promise<number>((resolve) => {
          let length = 0;
          res.on('data', (chunk: Buffer) => (length += chunk.length));
          res.on('end', () => resolve(length));
          res.resume();
        }),
    };
  };

  describe.each(['file', 'returned', 'piped', 'sse'])('%s', (kind) => {
    it('holds the lock until the body is written: a second request on the key never produces its body meanwhile', async () => {
      const id = unique(`${name}-${kind}`);
      const key = `${kind}:${id}`;
      const path = `/streams/${kind}/${id}`;
      const a = await startUnread(path, `${id}-a`, id);
      expect(a.status).toBe(200);

      const b = await request(base).get(path).set('x-req', `${id}-b`).set('x-id', id);
      const length = await a.read();

      expect(runs.overlaps(key)).toEqual([]);
      expect(b.status).toBe(409);
      expect(runs.labels(key)).toEqual([`${id}-a`]);
      expect(length).toBeGreaterThanOrEqual(CHUNKS * CHUNK.length);
      // Released once written: the key is free for the next request.
      await until(async () => (await held(key)) < 2, `${kind}: the written response released its lock`);
      const c = await request(base).get(path).set('x-req', `${id}-c`).set('x-id', id);
      expect(c.status).toBe(200);
    });

    it('releases the lock when the client of an unfinished body disconnects', async () => {
      const id = unique(`${name}-${kind}`);
      const key = `${kind}:${id}`;
      const a = await startUnread(`/streams/${kind}/${id}`, `${id}-a`, id);
      expect(a.status).toBe(200);
      expect(await held(key)).toBeGreaterThanOrEqual(2);
      a.client.destroy();
      await until(async () => (await held(key)) < 2, `${kind}: the disconnected response released its lock`);
    });
  });
});
