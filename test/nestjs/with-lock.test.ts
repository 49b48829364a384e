import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, SetMetadata, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockNotAcquiredError, type Lock } from '@redlock-nest/core';
import {
  currentLock,
  LockKeyError,
  RedlockModule,
  RedlockModuleNotInitializedError,
  RedlockService,
  WITH_LOCK_METADATA,
  WithLock,
} from '@redlock-nest/nestjs';
import type { Redis } from 'ioredis';
import { RedisCluster } from '../harness/redis-server.js';
import { deferred, directClient, lockKey, OverlapProbe, rejection, unique, until } from './helpers.js';

@Injectable()
class Orders {
  readonly probe = new OverlapProbe();
  /** Resolved with the id each time a locked body starts (lets tests wait for "inside"). */
  entered: Array<(id: string) => void> = [];

  private async body(id: string, gate?: Promise<void>): Promise<Lock | undefined> {
    this.probe.enter(id);
    for (const notify of this.entered.splice(0)) notify(id);
    await (gate ?? new Promise((r) => setImmediate(r)));
    this.probe.exit(id);
    return currentLock();
  }

  @WithLock('order:<id>', { wait: 10_000 })
  async pay(id: string, gate?: Promise<void>) {
    return this.body(id, gate);
  }

  @WithLock('order:<id>', { wait: false })
  async failFast(id: string) {
    return this.body(id);
  }

  @WithLock('order:<id>', { onLocked: 'skip' })
  async skipIfBusy(id: string) {
    await this.body(id);
    return 'ran';
  }

  @WithLock('order:<id>', { wait: 10_000 })
  async outer(id: string) {
    const mine = currentLock();
    const inner = await this.pay(id);
    return { mine, inner };
  }

  @WithLock('order:<order.id>', { fencing: true })
  async fenced(order: { id: string }) {
    return currentLock()!.fencingToken;
  }

  fencedRan = 0;

  @WithLock('order:<id>', { fencing: true })
  async fencedInner(id: string) {
    this.fencedRan++;
    return currentLock()!.fencingToken;
  }

  @WithLock('order:<id>')
  async unfencedOuter(id: string) {
    return this.fencedInner(id);
  }

  @WithLock('order:<id>', { fencing: true })
  async fencedOuter(id: string) {
    return { outer: currentLock()!.fencingToken, inner: await this.fencedInner(id) };
  }

  @WithLock((a: string, b: string) => [`acct:${a}`, `acct:${b}`])
  async transfer(a: string, b: string) {
    return currentLock()!.resources;
  }

  @SetMetadata('above', 'a')
  @WithLock('tag:<0>')
  @SetMetadata('below', 'b')
  async tagged(_x: string) {
    return 'tagged';
  }
}

@Module({ providers: [Orders], exports: [Orders] })
class OrdersModule {}

function waitEntered(orders: Orders): Promise<string> {
  return new Promise((resolve) => orders.entered.push(resolve));
}

describe('@WithLock without an initialised module', () => {
  it('rejects with a how-to-fix error and never runs the body', async () => {
    const orders = new Orders();
    const err = await rejection(orders.pay('x'));
    expect(err).toBeInstanceOf(RedlockModuleNotInitializedError);
    expect(err.message).toContain('Orders.pay');
    expect(err.message).toContain('RedlockModule.forRoot');
    expect(orders.probe.order).toEqual([]);
  });
});

describe('@WithLock on a provider', () => {
  let cluster: RedisCluster;
  let app: INestApplicationContext;
  let orders: Orders;
  let direct: Redis[];

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    direct = cluster.urls.map(directClient);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRootAsync({
          isGlobal: true,
          useFactory: () => ({ nodes: cluster.urls, ttl: 2_000 }),
        }),
        OrdersModule,
      ],
    }).compile();
    app = await moduleRef.init();
    orders = app.get(Orders);
  });

  afterAll(async () => {
    await app?.close();
    for (const c of direct ?? []) c.disconnect();
    await cluster?.stop();
  });

  it('never overlaps concurrent calls on the same key', async () => {
    const id = unique('same');
    await Promise.all(Array.from({ length: 6 }, () => orders.pay(id)));
    expect(orders.probe.overlaps).toBe(0);
    expect(orders.probe.order.filter((e) => e === `enter:${id}`)).toHaveLength(6);
  });

  it('runs calls on different keys at the same time', async () => {
    const a = unique('a');
    const b = unique('b');
    const gate = deferred();
    const bothInside = new Promise<void>((resolve) => {
      const seen = new Set<string>();
      const watch = (id: string) => {
        seen.add(id);
        if (seen.has(a) && seen.has(b)) resolve();
        else orders.entered.push(watch);
      };
      orders.entered.push(watch);
    });
    const calls = [orders.pay(a, gate.promise), orders.pay(b, gate.promise)];
    await bothInside; // would never resolve if the second call waited for the first
    gate.resolve();
    await Promise.all(calls);
  });

  it('holds the lock on a majority of nodes while the method runs, and releases it after', async () => {
    const id = unique('held');
    const gate = deferred();
    const inside = waitEntered(orders);
    const call = orders.pay(id, gate.promise);
    await inside;
    const holders = await Promise.all(direct.map((c) => c.exists(lockKey(`order:${id}`))));
    expect(holders.filter((h) => h === 1).length).toBeGreaterThanOrEqual(2);
    gate.resolve();
    const lock = await call;
    expect(lock?.resources).toEqual([`order:${id}`]);
    expect(await Promise.all(direct.map((c) => c.exists(lockKey(`order:${id}`))))).toEqual([0, 0, 0]);
  });

  it('wait: false fails at once, onLocked: skip returns undefined without running, default waits', async () => {
    const id = unique('busy');
    const gate = deferred();
    const inside = waitEntered(orders);
    const first = orders.pay(id, gate.promise);
    await inside;
    const entriesBefore = orders.probe.order.length;
    expect(await rejection(orders.failFast(id))).toBeInstanceOf(LockNotAcquiredError);
    expect(await orders.skipIfBusy(id)).toBeUndefined();
    expect(orders.probe.order.length).toBe(entriesBefore); // neither body ran
    const secondInside = waitEntered(orders);
    const second = orders.pay(id); // waits (wait: 10 s)
    gate.resolve();
    await first;
    await secondInside;
    await second;
    const seq = orders.probe.order.filter((e) => e.endsWith(id));
    expect(seq).toEqual([`enter:${id}`, `exit:${id}`, `enter:${id}`, `exit:${id}`]);
    expect(await orders.skipIfBusy(id)).toBe('ran');
  });

  it('is reentrant: a locked method calling another on the same key reuses the lock', async () => {
    const id = unique('re');
    const { mine, inner } = await orders.outer(id);
    expect(mine).toBeDefined();
    expect(inner).toBe(mine);
  });

  it('gives a fenced call inside a chain that holds the key without fencing a fresh token for the held lock, and reuses a fenced outer lock', async () => {
    const id = unique('nf');
    const earlier = await orders.fenced({ id });
    const before = orders.fencedRan;
    const token = await orders.unfencedOuter(id);
    expect(orders.fencedRan).toBe(before + 1);
    expect(typeof token).toBe('bigint');
    expect(token! > earlier!).toBe(true); // fenced by Lock.fence() on the outer lock
    const { outer, inner } = await orders.fencedOuter(unique('yf'));
    expect(typeof outer).toBe('bigint');
    expect(inner).toBe(outer);
  });

  it('resolves property paths, several keys, and fencing tokens', async () => {
    const id = unique('f');
    const t1 = await orders.fenced({ id });
    const t2 = await orders.fenced({ id });
    expect(typeof t1).toBe('bigint');
    expect(t2! > t1!).toBe(true);
    expect(await orders.transfer('1', '2')).toEqual(['acct:1', 'acct:2']);
  });

  it('rejects an undefined key value without locking or running', async () => {
    const before = orders.probe.order.length;
    const err = await rejection(orders.pay(undefined as unknown as string));
    expect(err).toBeInstanceOf(LockKeyError);
    expect(err.message).toContain('Orders.pay');
    expect(orders.probe.order.length).toBe(before);
    expect(await Promise.all(direct.map((c) => c.exists(lockKey('order:undefined'))))).toEqual([0, 0, 0]);
  });

  it('currentLock() is undefined outside a locked call', () => {
    expect(currentLock()).toBeUndefined();
  });

  it('keeps name and the metadata of decorators above and below it', async () => {
    const fn = Orders.prototype.tagged;
    expect(fn.name).toBe('tagged');
    expect(Reflect.getMetadata('above', fn)).toBe('a');
    expect(Reflect.getMetadata('below', fn)).toBe('b');
    expect(Reflect.getMetadata(WITH_LOCK_METADATA, fn)).toMatchObject({ key: 'tag:<0>' });
    expect(await orders.tagged('t')).toBe('tagged');
  });

  it('locks for instances made with new of a class the app provides (through the class binding)', async () => {
    const standalone = new Orders();
    const id = unique('new');
    const gate = deferred();
    const inside = waitEntered(standalone);
    const call = standalone.pay(id, gate.promise);
    await inside;
    expect(await rejection(orders.failFast(id))).toBeInstanceOf(LockNotAcquiredError);
    gate.resolve();
    await call;
  });

  it('RedlockService.using runs in the lock context (currentLock, reentrant @WithLock)', async () => {
    const service = app.get(RedlockService);
    const id = unique('svc');
    const result = await service.using(`order:${id}`, undefined, async (lock) => {
      expect(currentLock()).toBe(lock);
      return orders.pay(id);
    });
    expect(result?.resources).toEqual([`order:${id}`]);
  });

  it('keeps the lock alive past its TTL while the method runs (auto-extension)', async () => {
    const id = unique('long');
    const gate = deferred();
    const inside = waitEntered(orders);
    const call = orders.pay(id, gate.promise);
    await inside;
    // ttl is 2 s: the watchdog extends it every ttl/3, so the key's PTTL jumps back up while the body runs.
    let lowest = Infinity;
    await until(async () => {
      const pttl = await direct[0]!.pttl(lockKey(`order:${id}`));
      if (pttl < lowest) lowest = pttl;
      return pttl > lowest + 100;
    }, 'the watchdog extended the lock');
    gate.resolve();
    const held = await call;
    expect(held?.signal.aborted).toBe(false);
  });
});

describe('several apps in one process', () => {
  let cluster: RedisCluster;
  const apps: INestApplicationContext[] = [];
  let direct: Redis[];

  beforeAll(async () => {
    cluster = await RedisCluster.start(2);
    direct = cluster.urls.map(directClient);
    for (const url of cluster.urls) {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: [url], isGlobal: true, independenceCheck: 'off' }), OrdersModule],
      }).compile();
      apps.push(await moduleRef.init());
    }
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const c of direct ?? []) c.disconnect();
    await cluster?.stop();
  });

  it("each app's providers lock on that app's Redis", async () => {
    for (const [i, app] of apps.entries()) {
      const orders = app.get(Orders);
      const id = unique(`app${i}`);
      const gate = deferred();
      const inside = waitEntered(orders);
      const call = orders.pay(id, gate.promise);
      await inside;
      const exists = await Promise.all(direct.map((c) => c.exists(lockKey(`order:${id}`))));
      expect(exists).toEqual(i === 0 ? [1, 0] : [0, 1]);
      gate.resolve();
      await call;
    }
  });
});
