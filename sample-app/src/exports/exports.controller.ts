import { Controller, Get, Header, Inject, Param } from '@nestjs/common';
import { ExportsService } from './exports.service.js';

/** `GET /tenants/:tenantId/orders.csv`: the export; the third one at once per tenant gets 409. */
@Controller('tenants')
export class ExportsController {
  constructor(@Inject(ExportsService) private readonly exports: ExportsService) {}

  @Get(':tenantId/orders.csv')
  @Header('content-type', 'text/csv; charset=utf-8')
  export(@Param('tenantId') tenantId: string): Promise<string> {
    return this.exports.export(tenantId);
  }
}
