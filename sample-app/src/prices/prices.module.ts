import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';
import { PriceListController } from './price-list.controller.js';
import { PriceListService } from './price-list.service.js';
import { PriceListStore } from './price-list.store.js';

/** The fenced price list (see PriceListService); without DATA_REDIS its routes answer 503. */
@Module({
  providers: [
    {
      provide: PriceListStore,
      useFactory: (config: AppConfig) => (config.dataRedis ? PriceListStore.connect(config.dataRedis) : null),
      inject: [AppConfig],
    },
    PriceListService,
  ],
  controllers: [PriceListController],
})
export class PricesModule implements OnApplicationShutdown {
  constructor(@Inject(PriceListStore) private readonly store: PriceListStore | null) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store?.close();
  }
}
