/**
 * A Redis sorted set for the in-memory node: members ordered by score, ties by member compared
 * as bytes (Redis compares members with memcmp), so `ZRANGE key 0 0` names the same head as a
 * Redis server would. Sets of waiters and readers are small: the order is rebuilt on demand.
 */

/** One member and its score. */
export interface ScoredMember {
  readonly member: string;
  readonly score: number;
}

/** Redis' member order at equal scores: by UTF-8 bytes, not by UTF-16 code units. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** A sorted set (ZADD, ZREM, ZSCORE, ZCARD, ZRANK, ZRANGE by rank, ZREMRANGEBYSCORE -inf max). */
export class SortedSet {
  private readonly scores = new Map<string, number>();
  /** Members in Redis' order; undefined after a change. */
  private order: string[] | undefined;

  /** ZCARD. */
  get size(): number {
    return this.scores.size;
  }

  /** ZSCORE: undefined when `member` is absent. */
  score(member: string): number | undefined {
    return this.scores.get(member);
  }

  /** ZADD (with `onlyNew`: ZADD NX); 1 when `member` was added, 0 when it was there. */
  add(member: string, score: number, onlyNew = false): number {
    const had = this.scores.has(member);
    if (had && onlyNew) return 0;
    this.scores.set(member, score);
    this.order = undefined;
    return had ? 0 : 1;
  }

  /** ZREM of one member: 1 when it was there. */
  remove(member: string): number {
    if (!this.scores.delete(member)) return 0;
    this.order = undefined;
    return 1;
  }

  /** ZREMRANGEBYSCORE key -inf max: removes every member scored at most `max`; how many. */
  removeUpTo(max: number): number {
    let removed = 0;
    for (const [member, score] of this.scores) {
      if (score <= max) {
        this.scores.delete(member);
        removed++;
      }
    }
    if (removed > 0) this.order = undefined;
    return removed;
  }

  /** ZRANGE key rank rank WITHSCORES: a negative rank counts from the highest (-1). */
  at(rank: number): ScoredMember | undefined {
    const order = this.sorted();
    const member = order[rank < 0 ? order.length + rank : rank];
    return member === undefined ? undefined : { member, score: this.scores.get(member)! };
  }

  /** ZRANK: 0 for the lowest; undefined when absent. */
  rank(member: string): number | undefined {
    if (!this.scores.has(member)) return undefined;
    return this.sorted().indexOf(member);
  }

  /** Every member with its score, lowest first. */
  entries(): ScoredMember[] {
    return this.sorted().map((member) => ({ member, score: this.scores.get(member)! }));
  }

  private sorted(): string[] {
    this.order ??= [...this.scores.keys()].sort((a, b) => this.scores.get(a)! - this.scores.get(b)! || byBytes(a, b));
    return this.order;
  }
}
