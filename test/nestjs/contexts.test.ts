import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, type INestApplicationContext, type INestMicroservice } from '@nestjs/common';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { currentLock, LockRoute, RedlockModule, WithLock } from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { freePort, RedisServer } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, OverlapProbe, rejection, unique, type Deferred } from './helpers.js';

/** Shared by every app of this file, like a database two instances of a service write to. */
const world = {
  reportRuns: 0,
  reportGate: deferred(),
  reportEntered: deferred(),
  probe: new OverlapProbe(),
  eventLocks: [] as Array<readonly string[] | undefined>,
  rpcGates: new Map<string, { gate: Deferred; entered: Deferred }>(),
  misplacedRouteRuns: 0,
};

@Injectable()
class Reports {
  // Disabled so it never fires by itself; the test fires it like the scheduler would.
  @Cron('0 0 1 1 *', { name: 'daily-report', disabled: true, waitForCompletion: true })
  @WithLock('cron:daily-report', { onLocked: 'skip' })
  async daily() {
    world.reportRuns++;
    world.reportEntered.resolve();
    await world.reportGate.promise;
  }
}

@Injectable()
class OrderEvents {
  @OnEvent('order.paid', { promisify: true })
  @WithLock('order:<event.orderId>', { wait: 10_000 })
  async onPaid(event: { orderId: string }) {
    world.probe.enter(event.orderId);
    world.eventLocks.push(currentLock()?.resources);
    await new Promise((r) => setImmediate(r));
    world.probe.exit(event.orderId);
  }
}

@Controller()
class StockHandlers {
  @MessagePattern('stock.reserve')
  @WithLock('stock:<data.sku>', { wait: false })
  async reserve(@Payload() data: { sku: string }) {
    const entry = world.rpcGates.get(data.sku);
    entry?.entered.resolve();
    await entry?.gate.promise;
    return { sku: data.sku, locked: currentLock()?.resources };
  }

  // A mistake: @LockRoute takes its key from an HTTP request, and this handler never gets one.
  @MessagePattern('stock.audit')
  @LockRoute('stock:<sku>')
  audit() {
    world.misplacedRouteRuns++;
    return 'ran';
  }
}

describe('@WithLock in scheduler, event and microservice handlers', () => {
  let redis: RedisServer;
  let direct: Redis;
  const apps: INestApplicationContext[] = [];
  let micro: INestMicroservice;
  let client: ClientProxy;

  const app = (imports: unknown[], providers: unknown[], controllers: unknown[] = []) =>
    Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [redis.url], isGlobal: true }), ...(imports as never[])],
      providers: providers as never[],
      controllers: controllers as never[],
    }).compile();

  beforeAll(async () => {
    redis = await RedisServer.start();
    direct = directClient(redis.url);
    // Two "instances" of the same service, sharing one Redis.
    for (let i = 0; i < 2; i++) {
      const moduleRef = await app([ScheduleModule.forRoot(), EventEmitterModule.forRoot()], [Reports, OrderEvents]);
      apps.push(await moduleRef.init());
    }
    const port = await freePort();
    micro = (await app([], [], [StockHandlers])).createNestMicroservice({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false, // the expected LockNotAcquiredError of the contended message would be logged as an error
    });
    await micro.listen();
    client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await micro?.close();
    for (const a of apps) await a.close();
    direct?.disconnect();
    await redis?.stop();
  });

  it('@Cron with onLocked: skip runs once across instances firing at the same time', async () => {
    const [a, b] = apps.map((x) => x.get(SchedulerRegistry).getCronJob('daily-report'));
    const first = a!.fireOnTick();
    await world.reportEntered.promise;
    expect(await direct.exists(lockKey('cron:daily-report'))).toBe(1);
    await b!.fireOnTick(); // resolves while the first still runs: skipped, not queued
    expect(world.reportRuns).toBe(1);
    world.reportGate.resolve();
    await first;
    expect(world.reportRuns).toBe(1);
    expect(await direct.exists(lockKey('cron:daily-report'))).toBe(0);
    await b!.fireOnTick(); // free again: the next tick runs
    expect(world.reportRuns).toBe(2);
  });

  it('@OnEvent handlers on the same key never overlap, across instances', async () => {
    const orderId = unique('evt');
    const other = unique('evt');
    const emitters = apps.map((x) => x.get(EventEmitter2));
    await Promise.all([
      ...emitters.map((e) => e.emitAsync('order.paid', { orderId })),
      ...emitters.map((e) => e.emitAsync('order.paid', { orderId })),
      emitters[0]!.emitAsync('order.paid', { orderId: other }),
    ]);
    expect(world.probe.overlaps).toBe(0);
    expect(world.probe.order.filter((e) => e === `enter:${orderId}`)).toHaveLength(4);
    expect(world.eventLocks).toContainEqual([`order:${orderId}`]);
    expect(world.eventLocks).toContainEqual([`order:${other}`]);
  });

  it('@MessagePattern over TCP locks per message and rejects a concurrent one on the same key', async () => {
    const sku = unique('sku');
    const entry = { gate: deferred(), entered: deferred() };
    world.rpcGates.set(sku, entry);
    const first = lastValueFrom(client.send('stock.reserve', { sku }));
    await entry.entered.promise;
    expect(await direct.exists(lockKey(`stock:${sku}`))).toBe(1);
    const busy = await rejection(lastValueFrom(client.send('stock.reserve', { sku })));
    expect(busy).toMatchObject({ status: 'error' });
    entry.gate.resolve();
    expect(await first).toEqual({ sku, locked: [`stock:${sku}`] });
    expect(await lastValueFrom(client.send('stock.reserve', { sku }))).toEqual({ sku, locked: [`stock:${sku}`] });
  });

  it('refuses a @LockRoute handler reached by a message instead of running it unlocked', async () => {
    const failed = await rejection(lastValueFrom(client.send('stock.audit', { sku: unique('sku') })));
    expect(failed).toMatchObject({ status: 'error' });
    expect(world.misplacedRouteRuns).toBe(0);
  });
});
