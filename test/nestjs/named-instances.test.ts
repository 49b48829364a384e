/**
 * Named Redlock instances: several RedlockModule imports in one app, each on its own Redis,
 * picked by `@WithLock(key, { redlock })`, `@LockRoute(key, { redlock })` and
 * `@InjectRedlock(name)`; found through the one binding mechanism (discovery at bootstrap),
 * including request-scoped providers created after bootstrap.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Param, Post, Scope, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  currentLock,
  getRedlockServiceToken,
  InjectRedlock,
  LockRoute,
  RedlockModule,
  RedlockModuleNotInitializedError,
  RedlockService,
  WithLock,
} from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { RedisServer } from '../harness/redis-server.js';
import { directClient, lockKey, rejection, unique } from './helpers.js';

/** One direct client per server: [default, payments, audit]. */
let direct: Redis[] = [];
/** Which servers hold `resource`'s key right now, as 0/1 per server. */
const holders = (resource: string) => Promise.all(direct.map((c) => c.exists(lockKey(resource))));

@Injectable()
class Billing {
  constructor(
    @InjectRedlock('payments') readonly payments: RedlockService,
    @InjectRedlock() readonly byDefault: RedlockService,
    readonly plain: RedlockService,
  ) {}

  @WithLock('order:<id>')
  async order(id: string) {
    return holders(`order:${id}`);
  }

  @WithLock('charge:<id>', { redlock: 'payments' })
  async charge(id: string) {
    return holders(`charge:${id}`);
  }

  @WithLock('audit:<id>', { redlock: 'audit', wait: false })
  async audit(id: string) {
    return holders(`audit:${id}`);
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @WithLock('req:<id>', { redlock: 'payments' })
  async run(id: string) {
    return { holders: await holders(`req:${id}`), lock: currentLock()?.resources };
  }
}

@Controller('charges')
class ChargesController {
  @Post(':id')
  @LockRoute('charge:<id>', { redlock: 'payments' })
  async charge(@Param('id') id: string) {
    return { holders: await holders(`charge:${id}`) };
  }
}

@Injectable()
class Misconfigured {
  @WithLock('x:<id>', { redlock: 'missing' })
  async run(id: string) {
    return id;
  }
}

describe('named Redlock instances', () => {
  const servers: RedisServer[] = [];
  let app: INestApplication;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) servers.push(await RedisServer.start());
    direct = servers.map((s) => directClient(s.url));
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ nodes: [servers[0]!.url], isGlobal: true }),
        RedlockModule.forRoot({ name: 'payments', nodes: [servers[1]!.url], isGlobal: true, ttl: 4_000 }),
        RedlockModule.forRootAsync({ name: 'audit', isGlobal: true, useFactory: () => ({ nodes: [servers[2]!.url] }) }),
      ],
      providers: [Billing, PerRequest],
      controllers: [ChargesController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    for (const c of direct) c.disconnect();
    for (const s of servers) await s.stop();
  });

  it('@WithLock locks on the instance it names, the default one without a name', async () => {
    const billing = app.get(Billing);
    expect(await billing.order(unique('o'))).toEqual([1, 0, 0]);
    expect(await billing.charge(unique('c'))).toEqual([0, 1, 0]);
    expect(await billing.audit(unique('a'))).toEqual([0, 0, 1]);
  });

  it('@InjectRedlock(name) injects that instance; @InjectRedlock() and RedlockService the default one', () => {
    const billing = app.get(Billing);
    expect(billing.payments.options.nodes).toEqual([servers[1]!.url]);
    expect(billing.payments.options.ttl).toBe(4_000);
    expect(billing.byDefault).toBe(billing.plain);
    expect(billing.plain.options.nodes).toEqual([servers[0]!.url]);
    expect(app.get(getRedlockServiceToken('payments'))).toBe(billing.payments);
    expect(app.get(RedlockService)).toBe(billing.plain);
  });

  it('a named lock is contended only on its own instance', async () => {
    const billing = app.get(Billing);
    const id = unique('busy');
    const onDefault = await billing.plain.acquire(`audit:${id}`);
    expect(await billing.audit(id)).toEqual([1, 0, 1]); // the default instance's key does not block 'audit'
    const onAudit = await app.get<RedlockService>(getRedlockServiceToken('audit')).acquire(`audit:${id}`);
    await expect(billing.audit(id)).rejects.toMatchObject({ name: 'LockNotAcquiredError' });
    await onAudit.release();
    await onDefault.release();
  });

  it('@LockRoute(key, { redlock }) locks the route on that instance (409 while it is held there)', async () => {
    const id = unique('route');
    const ok = await request(app.getHttpServer()).post(`/charges/${id}`).expect(201);
    expect(ok.body).toEqual({ holders: [0, 1, 0] });
    const payments = app.get<RedlockService>(getRedlockServiceToken('payments'));
    const held = await payments.acquire(`charge:${id}`);
    await request(app.getHttpServer()).post(`/charges/${id}`).expect(409);
    await held.release();
  });

  it('request-scoped providers (created after bootstrap) lock on their named instance', async () => {
    const perRequest = await app.resolve(PerRequest);
    const id = unique('req');
    expect(await perRequest.run(id)).toEqual({ holders: [0, 1, 0], lock: [`req:${id}`] });
  });

  it('an instance name the app does not have fails app.init(), naming the missing import', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [servers[0]!.url], independenceCheck: 'off' })],
      providers: [Misconfigured],
    }).compile();
    const err = await rejection(moduleRef.init());
    expect(err).toBeInstanceOf(RedlockModuleNotInitializedError);
    expect(err.message).toContain('Misconfigured.run');
    expect(err.message).toContain("RedlockModule.forRoot({ name: 'missing'");
    await moduleRef.close();
  });

  it('the same instance name imported twice in one app is refused', async () => {
    const err = await rejection(
      Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ name: 'twice', nodes: [servers[0]!.url] }),
          RedlockModule.forRoot({ name: 'twice', nodes: [servers[1]!.url] }),
        ],
      })
        .compile()
        .then((ref) => ref.init()),
    );
    expect(err.message).toContain("RedlockModule.forRoot({ name: 'twice' }) is imported more than once");
  });

  it('the testing module stands in for a named instance (RedlockTestingModule.forRoot({ name }))', async () => {
    const ref = await Test.createTestingModule({
      imports: [
        RedlockTestingModule.forRoot(),
        RedlockTestingModule.forRoot({ name: 'payments' }),
        RedlockTestingModule.forRoot({ name: 'audit' }),
      ],
      providers: [Billing],
    }).compile();
    await ref.init();
    try {
      const payments = ref.get<RedlockTestingService>(getRedlockServiceToken('payments'));
      expect(payments).toBeInstanceOf(RedlockTestingService);
      const other = payments.holdElsewhere('charge:t1');
      await expect(ref.get(Billing).charge('t1')).rejects.toMatchObject({ name: 'LockNotAcquiredError' });
      other.release();
      expect(ref.get(Billing).payments).toBe(payments);
      expect(ref.get(Billing).plain).not.toBe(payments);
    } finally {
      await ref.close();
    }
  });
});

@Injectable()
class Ledger {
  @WithLock('ledger:<id>')
  async write(id: string) {
    return currentLock();
  }
}

@Controller('ledger')
class LedgerController {
  constructor(private readonly ledger: Ledger) {}

  @Post(':id')
  @LockRoute('ledger:<id>')
  async write(@Param('id') id: string) {
    const route = currentLock();
    const inner = await this.ledger.write(id);
    return { reused: inner !== undefined && inner === route };
  }
}

describe('several apps in one process', () => {
  it("each app's RedlockGuard and @WithLock methods use that app (the route's lock is reused inside)", async () => {
    const apps: INestApplication[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const ref = await Test.createTestingModule({
          imports: [RedlockTestingModule.forRoot()],
          providers: [Ledger],
          controllers: [LedgerController],
        }).compile();
        const app = ref.createNestApplication({ logger: false });
        await app.init();
        apps.push(app);
      }
      for (const app of apps) {
        const res = await request(app.getHttpServer()).post('/ledger/1').expect(201);
        expect(res.body).toEqual({ reused: true });
      }
    } finally {
      for (const app of apps) await app.close();
    }
  });
});

describe('before init and with new', () => {
  it('a module compiled but not initialised locks through the class binding (unit tests that skip init())', async () => {
    const ref = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ name: 'payments' }), RedlockTestingModule.forRoot({ name: 'audit' })],
      // Billing also injects the default RedlockService, which this test does not lock on.
      providers: [Billing, { provide: RedlockService, useValue: {} }],
    }).compile();
    try {
      const payments = ref.get<RedlockTestingService>(getRedlockServiceToken('payments'));
      const other = payments.holdElsewhere('charge:early');
      await expect(ref.get(Billing).charge('early')).rejects.toMatchObject({ name: 'LockNotAcquiredError' });
      other.release();
    } finally {
      await ref.close();
    }
  });

  it('an instance made with new, of a class no running app provides: RedlockModuleNotInitializedError naming the fix, body not run', async () => {
    let ran = false;
    class Loose {
      @WithLock('loose:<id>')
      async run(id: string) {
        ran = true;
        return id;
      }
    }
    const err = await rejection(new Loose().run('1'));
    expect(err).toBeInstanceOf(RedlockModuleNotInitializedError);
    expect(err.message).toContain('Loose.run');
    expect(err.message).toContain('not with `new`');
    expect(ran).toBe(false);
  });
});
