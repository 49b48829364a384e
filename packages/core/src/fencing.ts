/**
 * Fencing-token arithmetic (see docs/fencing.md for why this is monotonic).
 *
 * Each granting node returns its incremented counter per resource. The token of a
 * resource is the maximum over the granting quorum. Before it is handed out, a
 * majority of nodes must hold a counter ≥ the token; nodes of the quorum that
 * already returned exactly the token count towards that majority, so in the common
 * case (all counters agree) no write-back round is needed.
 */
export interface SettledTokens {
  /** The token of each resource, in resource order. */
  readonly tokens: bigint[];
  /** The same, as decimal strings (what the write-back script takes). */
  readonly decimal: string[];
  /** How many granting nodes already hold every token (no write-back needed there). */
  readonly upToDate: number;
}

/** Computes tokens from the counters returned by the granting nodes. */
export function settleTokens(values: ReadonlyArray<readonly string[] | undefined>, resourceCount: number): SettledTokens {
  const tokens: bigint[] = new Array(resourceCount).fill(0n);
  const granted: Array<readonly string[]> = [];
  for (const v of values) {
    if (v === undefined) continue;
    granted.push(v);
    for (let r = 0; r < resourceCount; r++) {
      const t = BigInt(v[r]!);
      if (t > tokens[r]!) tokens[r] = t;
    }
  }
  const decimal = tokens.map(String);
  let upToDate = 0;
  for (const v of granted) {
    if (v.every((s, r) => s === decimal[r])) upToDate++;
  }
  return { tokens, decimal, upToDate };
}
