import { Body, Controller, Get, Inject, Param, Put } from '@nestjs/common';
import { PriceListService, type PriceChange, type PriceListView } from './price-list.service.js';

/**
 * `GET /prices`: the whole list under the read lock (reads of every instance run together).
 * `PUT /prices/:sku`: one price under the write lock, written with its fencing token.
 * The lock is the service's `@WithLock`, taken when it is called (after the body is parsed).
 */
@Controller('prices')
export class PriceListController {
  constructor(@Inject(PriceListService) private readonly prices: PriceListService) {}

  @Get()
  list(): Promise<PriceListView> {
    this.prices.assertAvailable();
    return this.prices.list();
  }

  @Put(':sku')
  setPrice(@Param('sku') sku: string, @Body() body: { priceCents?: unknown } | undefined): Promise<PriceChange> {
    this.prices.assertAvailable();
    return this.prices.setPrice(sku, Number(body?.priceCents));
  }
}
