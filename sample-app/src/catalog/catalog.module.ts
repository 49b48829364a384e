import { Inject, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';
import { CatalogController } from './catalog.controller.js';
import { CatalogService } from './catalog.service.js';
import { CatalogStore } from './catalog.store.js';

/** How many catalog items (sku-1..sku-N) exist at startup. */
const SEED_ITEMS = 20;

/** The catalog: a read-write lock per item (see CatalogService). */
@Module({
  providers: [
    { provide: CatalogStore, useFactory: (config: AppConfig) => new CatalogStore(config.ordersDb), inject: [AppConfig] },
    CatalogService,
  ],
  controllers: [CatalogController],
})
export class CatalogModule implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(CatalogStore) private readonly store: CatalogStore) {}

  onModuleInit(): void {
    this.store.seed(SEED_ITEMS);
  }

  onApplicationShutdown(): void {
    this.store.close();
  }
}
