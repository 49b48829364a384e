import { Inject, Injectable } from '@nestjs/common';
import { WithSemaphore } from '@redlock-nest/nestjs';
import { LedgerExporter } from './ledger-exporter.js';

/** How many exports of one tenant may run at once, across every instance. */
export const EXPORT_PERMITS = 2;

/**
 * CSV exports, at most {@link EXPORT_PERMITS} per tenant at once across all instances: a
 * distributed semaphore (`export:<tenantId>`), each permit auto-extended while its export runs.
 * `wait: false`: a third export is refused at once (409 with Retry-After over HTTP) instead of
 * queueing behind two long ones.
 */
@Injectable()
export class ExportsService {
  constructor(@Inject(LedgerExporter) private readonly exporter: LedgerExporter) {}

  @WithSemaphore('export:<tenantId>', { permits: EXPORT_PERMITS, wait: false, ttl: 30_000 })
  async export(tenantId: string): Promise<string> {
    return this.exporter.render(tenantId);
  }
}
