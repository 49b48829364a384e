import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module.js';
import { ExportsController } from './exports.controller.js';
import { ExportsService } from './exports.service.js';
import { LedgerExporter } from './ledger-exporter.js';

/** CSV exports under a per-tenant semaphore (see ExportsService). */
@Module({
  imports: [OrdersModule],
  providers: [ExportsService, LedgerExporter],
  controllers: [ExportsController],
})
export class ExportsModule {}
