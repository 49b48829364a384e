import type { LockEngine } from '@redlock-nest/core';

/**
 * Logs one warning per lock lost while it was held (validity ran out, taken over, `maxHoldMs`):
 * resources, reason and how long it was held; never the owner token. Locks released by an
 * application shutdown are not reported (that loss is intended). Returns the unsubscribe function.
 */
export function logLostLocks(redlock: Pick<LockEngine, 'on'>, logger: { warn(message: string): void }): () => void {
  return redlock.on('lost', (event) => {
    if (event.reason === 'released') return;
    logger.warn(
      `Lock on ${JSON.stringify(event.resources)} lost after ${Math.round(event.heldMs)} ms (${event.reason}); ` +
        'its holder was told through lock.signal.',
    );
  });
}
