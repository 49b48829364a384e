import { Body, Controller, Get, Inject, Param, Put } from '@nestjs/common';
import { LockRoute } from '@redlock-nest/nestjs';
import { CatalogService } from './catalog.service.js';
import type { CatalogItem } from './catalog.store.js';

/**
 * The catalog over HTTP. `GET` holds the item's read lock for the whole request
 * (`@LockRoute` with `mode: 'read'`): any number of reads run at once. `PUT` goes through
 * `CatalogService.setPrice`, which takes the write lock, waiting for the reads in flight.
 */
@Controller('catalog')
export class CatalogController {
  constructor(@Inject(CatalogService) private readonly catalog: CatalogService) {}

  @Get(':sku')
  @LockRoute('catalog:<sku>', { mode: 'read', wait: 5_000 })
  get(@Param('sku') sku: string): Promise<CatalogItem> {
    return this.catalog.get(sku);
  }

  @Put(':sku/price')
  setPrice(@Param('sku') sku: string, @Body() body: { priceCents?: unknown } | undefined): Promise<CatalogItem> {
    return this.catalog.setPrice(sku, Number(body?.priceCents));
  }
}
