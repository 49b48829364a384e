import { Controller, Get, Header, Inject, Param, Res } from '@nestjs/common';
import { formatSection, SECTION_HEADER } from '../sections/section.js';
import { ExportsService } from './exports.service.js';

/** The part of the platform response the handler touches (Express or Fastify). */
interface HeaderResponse {
  header(name: string, value: string): unknown;
}

/** `GET /tenants/:tenantId/orders.csv`: the export; the third one at once per tenant gets 409. */
@Controller('tenants')
export class ExportsController {
  constructor(@Inject(ExportsService) private readonly exports: ExportsService) {}

  @Get(':tenantId/orders.csv')
  @Header('content-type', 'text/csv; charset=utf-8')
  async export(@Param('tenantId') tenantId: string, @Res({ passthrough: true }) res: HeaderResponse): Promise<string> {
    const { csv, section } = await this.exports.export(tenantId);
    // When this export held its permit: the demo checks that no more than EXPORT_PERMITS overlapped.
    res.header(SECTION_HEADER, formatSection(section));
    return csv;
  }
}
