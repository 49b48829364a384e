import { classifyRound, type AttemptFailure } from '../rounds/attempt-failure.js';
import { settleFencing, type FenceCatchUp, type FencingContext } from './fencing.js';
import type { RoundResult } from '../rounds/round.js';

/** What settling a round's grants needs of its Redlock. @internal */
export interface GrantSettleHost {
  readonly quorum: number;
  drift(ttlMs: number): number;
  fencingContext(timeoutMs: number): FencingContext;
}

/** A round's grants, settled: the lock's validity end and fencing tokens, or why it failed. @internal */
export interface SettledGrant {
  readonly failure: AttemptFailure | undefined;
  readonly fencingTokens: ReadonlyMap<string, bigint> | undefined;
  readonly expiresAtMono: number;
}

/**
 * The steps after an acquire round that every primitive shares: a quorum or the failure's
 * kind, the fencing settle when fenced, and the validity check. Validity counts from the
 * round's first write (`start` when nothing was written): no key was set before it.
 * `what` names the lock in the message ("lock", "read lock"...).
 * @internal
 */
export async function settleGrant(
  host: GrantSettleHost,
  round: RoundResult<string[]>,
  fencing: { readonly resources: readonly string[]; readonly keys: readonly string[]; readonly catchUp: FenceCatchUp } | undefined,
  timing: { readonly start: number; readonly ttlMs: number; readonly timeoutMs: number },
  what = 'lock',
): Promise<SettledGrant> {
  const { start, ttlMs, timeoutMs } = timing;
  let failure: AttemptFailure | undefined;
  let fencingTokens: ReadonlyMap<string, bigint> | undefined;
  if (round.ok < host.quorum) {
    failure = classifyRound(round, host.quorum);
  } else if (fencing) {
    const fenced = await settleFencing(host.fencingContext(timeoutMs), round, fencing.resources, fencing.keys, fencing.catchUp);
    if (fenced.ok) fencingTokens = fenced.tokens;
    else failure = { kind: 'unavailable', nodes: fenced.nodes, reason: fenced.reason };
  }
  const expiresAtMono = (round.sentAt ?? start) + ttlMs - host.drift(ttlMs);
  if (!failure && expiresAtMono <= performance.now()) {
    failure = {
      kind: 'unavailable',
      nodes: round.outcomes,
      reason: `a quorum answered, but only after the ${what}'s validity (${ttlMs} ms minus drift) had run out`,
      transient: true,
    };
  }
  return { failure, fencingTokens, expiresAtMono };
}
