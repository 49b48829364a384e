import { NodeIndependenceError, RedlockArgumentError } from '@redlock-nest/core';
import type { NodeReport } from '@redlock-nest/core/operator';
import type { IndependenceCheckMode } from '../options/redlock-options.js';

/** The first word of an error text: the Redis error code of a reply (`NOPERM`, `WRONGPASS`…). */
function codeOf(error: string | undefined): string | undefined {
  return error?.split(/\s/, 1)[0];
}

/**
 * The module's startup check that the nodes are independent masters (`independenceCheck`).
 *
 * - `'fail'` (default): a replica, two nodes that are one server, or a node whose ACL user may not
 *   run INFO (so the check cannot tell) make startup reject.
 * - `'warn'`: a replica or a refused INFO is logged; two nodes that are one server still reject
 *   (they break the quorum arithmetic, whatever the mode).
 * - `'off'`: no check (ACL setups without `+info`); duplicates listed by address are still
 *   refused when the Redlock is created.
 *
 * A node that is down is logged, never fatal: that is availability, not configuration.
 */
export async function checkIndependenceAtStartup(
  checkIndependence: () => Promise<NodeReport[]>,
  mode: IndependenceCheckMode,
  logger: { warn(message: string): void },
): Promise<void> {
  if (mode === 'off') return;
  let reports: NodeReport[];
  try {
    reports = await checkIndependence();
  } catch (err) {
    if (mode === 'fail' || !(err instanceof NodeIndependenceError) || err.sameServer) throw err;
    logger.warn(err.message);
    return;
  }
  const refused = reports.filter((r) => !r.reachable && codeOf(r.error) === 'NOPERM');
  if (refused.length > 0) {
    const message =
      `The independence check could not ask ${refused.map((r) => r.node).join(', ')} for its role: the ACL user may not run INFO ` +
      "(NOPERM), so a replica would go unnoticed. Grant the user '+info', or set independenceCheck: 'off' " +
      "(or 'warn') in RedlockModule's options if your ACL policy forbids INFO.";
    if (mode === 'fail') throw new RedlockArgumentError(message);
    logger.warn(message);
  }
  const unreachable = reports.filter((r) => !r.reachable && codeOf(r.error) !== 'NOPERM');
  if (unreachable.length > 0) {
    logger.warn(
      `Independence check could not reach ${unreachable.map((r) => `${r.node} (${r.error ?? 'no answer'})`).join(', ')}; ` +
        'locks need a majority of the nodes up. The check runs again when it connects.',
    );
  }
}
