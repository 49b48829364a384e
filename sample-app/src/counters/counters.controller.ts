import { Controller, Get, Inject, Param, Post } from '@nestjs/common';
import { LockRoute } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { inSection, type Section } from '../sections/section.js';
import { CohortStats, type CohortCounts } from './cohort-stats.js';
import { HotCounterStore } from './hot-counter.store.js';

/** What an increment answers. */
export interface Increment {
  readonly name: string;
  readonly value: number;
  readonly section: Section;
}

/** What `GET /counters/:name` answers: the value, and how this instance took the counter's lock. */
export interface CounterView {
  readonly name: string;
  readonly value: number;
  readonly instance: string;
  readonly acquisitions: CohortCounts;
}

/**
 * A hot key: `POST /counters/:name/increment` holds the plain lock `counter:<name>` for the whole
 * request and waits up to 10 s for it. Many concurrent increments on one instance are where lock
 * cohorting pays: when a holder releases while another request of the same process waits for the
 * same key, the lock is handed over inside the process (no Redis command, the keys never leave
 * the nodes), up to 16 times in a row or 100 ms, then other processes get their turn. See
 * docs/cohorting.md; `GET /counters/:name` shows how many acquisitions were hand-offs.
 */
@Controller('counters')
export class CountersController {
  constructor(
    @Inject(HotCounterStore) private readonly store: HotCounterStore,
    @Inject(CohortStats) private readonly stats: CohortStats,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  @Post(':name/increment')
  @LockRoute('counter:<name>', { wait: 10_000 })
  async increment(@Param('name') name: string): Promise<Increment> {
    const { value, section } = await inSection(this.config.instanceId, this.config.sectionWorkMs, () => this.store.increment(name));
    return { name, value, section };
  }

  @Get(':name')
  get(@Param('name') name: string): CounterView {
    return { name, value: this.store.value(name), instance: this.config.instanceId, acquisitions: this.stats.of(name) };
  }
}
