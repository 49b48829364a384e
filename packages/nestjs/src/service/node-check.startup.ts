import type { Logger } from '@nestjs/common';
import { NodeCheckError, type NodeCheckReport } from '@redlock-nest/core/operator';
import type { NodeCheckMode } from '../options/redlock-options.js';

/**
 * The module's startup node check (module option `nodeCheck`): logs every warn and error
 * finding of the engine's `checkNodes()` with its fix, and with `'fail'` rejects on an error.
 * Findings carry node labels only, never credentials.
 */
export async function runStartupNodeCheck(checkNodes: () => Promise<NodeCheckReport>, mode: NodeCheckMode, logger: Logger): Promise<void> {
  if (mode === 'off') return;
  const report = await checkNodes();
  for (const f of report.findings) {
    if (f.level === 'ok') continue;
    const line = `Node check: ${f.node} ${f.check}: ${f.message}${f.fix ? ` (fix: ${f.fix})` : ''}`;
    if (f.level === 'error') logger.error(line);
    else logger.warn(line);
  }
  if (mode === 'fail' && !report.ok) throw new NodeCheckError(report.findings);
}
