import { RedisFencedStore } from '@redlock-nest/core';
import { Redis } from 'ioredis';

/** The SKUs on the price list, and the price each has until someone changes it. */
export const LIST_PRICES: Readonly<Record<string, number>> = { 'sku-1': 1_000, 'sku-2': 2_500, 'sku-3': 399, 'sku-4': 12_000, 'sku-5': 75 };

/** One line of the price list. `fence` is the highest fencing token that wrote it ("0": never changed). */
export interface PriceEntry {
  readonly sku: string;
  readonly priceCents: number;
  readonly fence: string;
}

/**
 * The price list, kept in the library's `RedisFencedStore` on a data Redis that is not a lock
 * node. Every write carries the write lock's fencing token and the store refuses a token lower
 * than one it has seen (`StaleFencingTokenError`): a writer paused past its lock's TTL cannot
 * overwrite the price its successor set. Reads need no token: they never write.
 */
export class PriceListStore {
  private readonly fenced: RedisFencedStore;

  constructor(private readonly client: Redis) {
    this.fenced = new RedisFencedStore(client, { keyPrefix: 'price-list:' });
  }

  /** Connects to `url` (a redis:// URL); the store owns the connection and closes it in {@link close}. */
  static connect(url: string): PriceListStore {
    // Fail a command at once while the data Redis is down, rather than queueing it for ever.
    return new PriceListStore(new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false }));
  }

  async list(): Promise<PriceEntry[]> {
    return Promise.all(Object.keys(LIST_PRICES).map((sku) => this.get(sku)));
  }

  async get(sku: string): Promise<PriceEntry> {
    const stored = await this.fenced.read(sku);
    const priceCents = stored?.value === undefined ? LIST_PRICES[sku]! : Number(stored.value);
    return { sku, priceCents, fence: String(stored?.token ?? 0n) };
  }

  /** @throws {StaleFencingTokenError} a writer with a newer token has written this price. */
  async set(sku: string, priceCents: number, token: bigint): Promise<void> {
    await this.fenced.write(sku, String(priceCents), token);
  }

  async close(): Promise<void> {
    if (this.client.status !== 'end') await this.client.quit().catch(() => this.client.disconnect());
  }
}
