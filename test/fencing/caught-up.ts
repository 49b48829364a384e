/**
 * The check docs/fencing.md asks for between two restarts of a rolling restart without
 * persistence (the same function is printed there): the restarted node holds every
 * fencing counter at least as high as the nodes that stayed up.
 */
import type { Redis } from 'ioredis';

/** True when the restarted node holds every fencing counter at least as high as the nodes that stayed up. */
export async function caughtUp(restarted: Redis, stayedUp: readonly Redis[], resources: readonly string[]): Promise<boolean> {
  const keys = resources.map((r) => `redlock:fence:${r}`);
  // Read the others first: counters only grow, so the restarted node must reach these values.
  const others = await Promise.all(stayedUp.map((node) => node.mget(...keys)));
  const mine = await restarted.mget(...keys);
  return keys.every((_, i) => others.every((o) => BigInt(o[i] ?? '0') <= BigInt(mine[i] ?? '0')));
}
