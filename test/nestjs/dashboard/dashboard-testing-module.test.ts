/**
 * The dashboard over RedlockTestingModule's in-memory nodes: an app's own tests can render it
 * with locks held "elsewhere", no Redis needed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockDashboardModule } from '@redlock-nest/nestjs';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';
import request from 'supertest';

describe('dashboard over the testing module', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot(), RedlockDashboardModule.forRoot({ path: '/locks', public: true })],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('lists a lock held elsewhere on the in-memory nodes, and drops it once released', async () => {
    const other = app.get(RedlockTestingService).holdElsewhere('cron:report');
    const body = (await request(app.getHttpServer()).get('/locks/data').expect(200)).body;
    expect(body.listing.errors).toEqual([]);
    expect(body.nodes).toHaveLength(3);
    expect(body.locks).toEqual([expect.objectContaining({ resource: 'cron:report', kind: 'mutex', heldOn: 3 })]);
    other.release();
    expect((await request(app.getHttpServer()).get('/locks/data').expect(200)).body.locks).toEqual([]);
  });
});
