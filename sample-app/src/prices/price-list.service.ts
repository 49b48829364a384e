import { BadRequestException, Inject, Injectable, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { currentLock, WithLock } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { inSection, type Section } from '../sections/section.js';
import { LIST_PRICES, PriceListStore, type PriceEntry } from './price-list.store.js';

/** The lock of the whole list: one document, read by many at once, changed by one writer at a time. */
export const PRICE_LIST_LOCK = 'price-list';
/** How long a request waits for the lock (then 409 with Retry-After). */
const WAIT_MS = 10_000;

/** The answer of a read: every price, and when this request held the read lock. */
export interface PriceListView {
  readonly prices: readonly PriceEntry[];
  readonly section: Section;
}

/** The answer of a price change: the price as written, with the token that wrote it. */
export interface PriceChange extends PriceEntry {
  readonly section: Section;
}

/**
 * The price list under a read-write lock across instances: any number of reads hold
 * `price-list` in `'read'` mode at once; a price change holds it in `'write'` mode, alone, with
 * a fencing token the store checks. A writer that waits keeps new readers out, so a stream of
 * reads cannot starve it.
 */
@Injectable()
export class PriceListService {
  constructor(
    @Inject(AppConfig) private readonly config: AppConfig,
    @Inject(PriceListStore) private readonly store: PriceListStore | null,
  ) {}

  /** Throws before any lock is taken when the price list has no data Redis. */
  assertAvailable(): void {
    if (!this.store) {
      throw new ServiceUnavailableException(
        'The price list needs its data Redis: set DATA_REDIS to the redis:// URL of a Redis that is not a lock node (npm start sets it).',
      );
    }
  }

  @WithLock(PRICE_LIST_LOCK, { mode: 'read', wait: WAIT_MS })
  async list(): Promise<PriceListView> {
    const { value, section } = await inSection(this.config.instanceId, this.config.sectionWorkMs, () => this.store!.list());
    return { prices: value, section };
  }

  @WithLock(PRICE_LIST_LOCK, { mode: 'write', fencing: true, wait: WAIT_MS })
  async setPrice(sku: string, priceCents: number): Promise<PriceChange> {
    if (!(sku in LIST_PRICES)) throw new NotFoundException(`${sku} is not on the price list (${Object.keys(LIST_PRICES).join(', ')}).`);
    if (!Number.isInteger(priceCents) || priceCents < 0) {
      throw new BadRequestException('priceCents must be a whole number of cents, 0 or more.');
    }
    // The write lock's token: higher than every earlier writer's, on every instance.
    const token = currentLock(PRICE_LIST_LOCK)!.fencingToken!;
    const { section } = await inSection(this.config.instanceId, this.config.sectionWorkMs, () => this.store!.set(sku, priceCents, token));
    return { sku, priceCents, fence: String(token), section };
  }
}
