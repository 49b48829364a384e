import { Inject, Injectable } from '@nestjs/common';
import { WithSemaphore } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';
import { inSection, type Section } from '../sections/section.js';
import { LedgerExporter } from './ledger-exporter.js';

/** How many exports of one tenant may run at once, across every instance. */
export const EXPORT_PERMITS = 2;

/** An export and when it held its permit. */
export interface ExportResult {
  readonly csv: string;
  readonly section: Section;
}

/**
 * CSV exports, at most {@link EXPORT_PERMITS} per tenant at once across all instances: a
 * distributed semaphore (`export:<tenantId>`), each permit auto-extended while its export runs.
 * `wait: false`: a third export is refused at once (409 with Retry-After over HTTP) instead of
 * queueing behind two long ones.
 */
@Injectable()
export class ExportsService {
  constructor(
    @Inject(LedgerExporter) private readonly exporter: LedgerExporter,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  @WithSemaphore('export:<tenantId>', { permits: EXPORT_PERMITS, wait: false, ttl: 30_000 })
  async export(tenantId: string): Promise<ExportResult> {
    const { value, section } = await inSection(this.config.instanceId, this.config.sectionWorkMs, () => this.exporter.render(tenantId));
    return { csv: value, section };
  }
}
