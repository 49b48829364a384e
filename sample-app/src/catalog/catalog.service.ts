import { BadRequestException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { WithLock } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { CatalogStore, type CatalogItem } from './catalog.store.js';

/** How long a price change waits for the readers in flight (then 409 with Retry-After). */
const WRITE_WAIT_MS = 5_000;

/**
 * Catalog reads and price changes under a read-write lock per item, across instances:
 * readers share `catalog:<sku>` and run together; a price change takes it in `'write'` mode,
 * alone, so no reader sees the new price without its history row (or the reverse). A waiting
 * writer keeps new readers out, so a stream of reads cannot starve it.
 */
@Injectable()
export class CatalogService {
  constructor(
    @Inject(CatalogStore) private readonly store: CatalogStore,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  /** Called from `GET /catalog/:sku`, this reuses the route's read lock (one acquisition). */
  @WithLock('catalog:<sku>', { mode: 'read', wait: WRITE_WAIT_MS })
  async get(sku: string): Promise<CatalogItem> {
    const item = await this.store.read(sku);
    if (!item) throw new NotFoundException(`Catalog item ${sku} does not exist.`);
    return item;
  }

  @WithLock('catalog:<sku>', { mode: 'write', wait: WRITE_WAIT_MS })
  async setPrice(sku: string, priceCents: number): Promise<CatalogItem> {
    if (!Number.isInteger(priceCents) || priceCents < 0) {
      throw new BadRequestException('priceCents must be a whole number of cents, 0 or more.');
    }
    const item = await this.store.read(sku);
    if (!item) throw new NotFoundException(`Catalog item ${sku} does not exist.`);
    await this.store.write(sku, priceCents, item.version + 1, this.config.instanceId);
    return (await this.store.read(sku))!;
  }
}
